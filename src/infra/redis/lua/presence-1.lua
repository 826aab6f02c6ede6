-- presence: who is listening to a channel, timed by Redis TIME so that processes whose wall clocks
-- disagree (one set back) still see each other.
-- KEYS[1] sorted set: member = listening process, score = when its presence expires (ms, Redis TIME)
-- ARGV[1] member to announce ('' to only count)  ARGV[2] presence ttl ms
-- Returns how many members are present now (the announced one included).
--! include lib/time.lua
local presentKey = KEYS[1]
local member, ttlMs = ARGV[1], tonumber(ARGV[2])
local now = sk_now()
redis.call('ZREMRANGEBYSCORE', presentKey, '-inf', '(' .. now)
if member ~= '' then redis.call('ZADD', presentKey, now + ttlMs, member) end
return redis.call('ZCARD', presentKey)
