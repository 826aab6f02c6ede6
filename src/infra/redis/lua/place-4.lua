-- place: the last step of writing a queue's order, once every drawn entrant has its place: the
-- buyers who arrived after the pre-queue closed get the places after the drawn ones, in arrival
-- order, and the queue is marked placed, in one step, so an arrival is either placed here or
-- places itself (queue-7.lua).
-- KEYS[1] queue hash  KEYS[2] late arrivals zset (userId -> 1, 2, …)  KEYS[3] places hash
-- KEYS[4] waiting places (the voucher's waitlist zset, userId -> place)
-- ARGV[1] entrants drawn  ARGV[2] how many of the first places the draw admits  ARGV[3] drawnAt ms
-- ARGV[4] expire-at unix seconds
-- Returns how many arrivals it placed, or PLACED_BEFORE (-1) when the queue was placed before.
local PLACED_BEFORE = -1
local queueKey, lateKey, placesKey, waitingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local entrants, admitting, drawnAt, expireAt = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
if redis.call('HGET', queueKey, 'placed') == '1' then return PLACED_BEFORE end
local late = redis.call('ZRANGE', lateKey, 0, -1, 'WITHSCORES')
for i = 1, #late, 2 do
  local user, arrival = late[i], tonumber(late[i + 1])
  local place = entrants + arrival
  redis.call('HSET', placesKey, user, place)
  redis.call('ZADD', waitingKey, place, user)
end
redis.call('HSET', queueKey, 'placed', 1, 'n', entrants, 'admitting', admitting, 'drawnAt', drawnAt)
for _, key in ipairs({queueKey, lateKey, placesKey, waitingKey}) do
  if redis.call('EXISTS', key) == 1 then redis.call('EXPIREAT', key, expireAt) end
end
return #late / 2
