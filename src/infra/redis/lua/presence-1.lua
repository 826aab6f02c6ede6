-- presence: who is listening to a channel, timed by Redis TIME so that processes whose wall clocks
-- disagree (one set back) still see each other.
-- KEYS[1] sorted set: member = listening process, score = when its presence expires (ms, Redis TIME)
-- ARGV[1] member to announce ('' to only count)  ARGV[2] presence ttl ms
-- Returns how many members are present now (the announced one included).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
if ARGV[1] ~= '' then redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) end
return redis.call('ZCARD', KEYS[1])
