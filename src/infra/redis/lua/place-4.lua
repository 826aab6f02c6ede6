-- place: the last step of writing a queue's order, once every drawn entrant has its place: the
-- buyers who arrived after the pre-queue closed get the places after the drawn ones, in arrival
-- order, and the queue is marked placed, in one step, so an arrival is either placed here or
-- places itself (queue-7.lua).
-- KEYS[1] queue hash  KEYS[2] late arrivals zset (userId -> 1, 2, …)  KEYS[3] places hash
-- KEYS[4] waiting places (the voucher's waitlist zset, userId -> place)
-- ARGV[1] entrants drawn  ARGV[2] how many of the first places the draw admits  ARGV[3] drawnAt ms
-- ARGV[4] expire-at unix seconds
-- Returns how many arrivals it placed, or -1 when the queue was placed before.
if redis.call('HGET', KEYS[1], 'placed') == '1' then return -1 end
local n = tonumber(ARGV[1])
local late = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #late, 2 do
  local place = n + tonumber(late[i + 1])
  redis.call('HSET', KEYS[3], late[i], place)
  redis.call('ZADD', KEYS[4], place, late[i])
end
redis.call('HSET', KEYS[1], 'placed', 1, 'n', n, 'admitting', ARGV[2], 'drawnAt', ARGV[3])
for i = 1, 4 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('EXPIREAT', KEYS[i], ARGV[4]) end
end
return #late / 2
