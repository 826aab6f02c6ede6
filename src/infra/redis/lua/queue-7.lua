-- queue: buyers join a queue voucher's queue (ARGV[1] "join") or ask where they stand ("look"),
-- in one call on the voucher's slot for all the buyers of a batch (the joins one API process
-- received for the voucher in one turn of its event loop, each decided as if alone, in order).
-- Before the draw a join only adds the buyer to the pre-queue (no place yet: the draw gives it);
-- once the pre-queue is closed (frozen, or Redis time at or past beginAt) a new buyer is appended
-- after every place the draw gives, in arrival order.
-- KEYS[1] queue hash (fields: KeySpace.queue in keys.ts)  KEYS[2] pre-queue zset (userId -> µs)
-- KEYS[3] late arrivals zset (userId -> 1, 2, …)  KEYS[4] places hash (userId -> place)
-- KEYS[5] waiting places: the voucher's waitlist zset (userId -> place)
-- KEYS[6] admitted places hash (userId -> orderId)  KEYS[7] voucher hash (its stock)
-- ARGV[1] join | look  ARGV[2] opensAt ms  ARGV[3] beginAt ms  ARGV[4] endAt ms
-- ARGV[5] expire-at unix seconds (the voucher's keys')  ARGV[6..] the buyers' user ids
-- Returns ten values per buyer, {code, state, place, ahead, orderId, promote, openedAt, drawAdmitted, admitted, now}:
--   code 0 (the buyer's state follows) · 3 NOT_STARTED (before opensAt) · 4 ENDED · 6 SOLD_OUT
--   (closed) · 11 NOT_IN_QUEUE (look, never joined); a new buyer is told 3, 4 or 6, a buyer who
--   joined before always hears their state. state prequeue | waiting | admitted | closed; place
--   and ahead '' until the draw placed everyone; promote 1 when units are left for the next
--   places (the caller promotes them: restock-8.lua); openedAt '' until the draw's admissions
--   are done; admitted: places admitted so far.
--! include lib/time.lua
local join = ARGV[1] == 'join'
local opensAt, beginAt, endAt, expireAt = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local FIRST_USER = 6
local now, nowMicros = sk_now()
local q = redis.call('HMGET', KEYS[1], 'frozen', 'n', 'placed', 'open', 'closed', 'drawAdmitted', 'openedAt', 'admitting')
local placed, open = q[3] == '1', q[4] == '1'
local admitted = redis.call('HLEN', KEYS[6])
local out = {}
local joinedPre, joinedLate = false, false

local function answer(state, place, ahead, orderId, promote)
  return 0, state, place or '', ahead or '', orderId or '', promote and 1 or 0, q[7] or '', tonumber(q[6] or '0'), admitted, now
end
local function refused(code)
  return code, '', '', '', '', 0, '', 0, 0, now
end

local function stateOf(user, place, promote)
  if not placed then return answer('prequeue') end
  local orderId = redis.call('HGET', KEYS[6], user)
  if orderId then return answer('admitted', place, 0, orderId) end
  if q[5] or now >= endAt then return answer('closed', place) end
  local ahead = redis.call('ZRANK', KEYS[5], user)
  if ahead then return answer('waiting', place, ahead, nil, promote) end
  -- One of the first places, while the draw admits them.
  if not open and place <= tonumber(q[8] or '0') then return answer('waiting', place, 0) end
  return answer('closed', place)
end

local function one(user, i)
  local place = redis.call('HGET', KEYS[4], user)
  if place then return stateOf(user, tonumber(place), false) end
  if redis.call('ZSCORE', KEYS[2], user) or redis.call('ZSCORE', KEYS[3], user) then return answer('prequeue') end
  if not join then return refused(11) end
  if now < opensAt then return refused(3) end
  if now >= endAt then return refused(4) end
  if q[5] then return refused(6) end

  if q[1] ~= '1' and now < beginAt then
    -- Buyers of one batch share a Redis time: + i µs keeps their join times apart, in order.
    redis.call('ZADD', KEYS[2], tonumber(nowMicros) + i, user)
    joinedPre = true
    return answer('prequeue')
  end
  local seq = redis.call('HINCRBY', KEYS[1], 'late', 1)
  redis.call('ZADD', KEYS[3], seq, user)
  joinedLate = true
  if not placed then return answer('prequeue') end -- the draw places it after the drawn ones
  place = tonumber(q[2]) + seq
  redis.call('HSET', KEYS[4], user, place)
  redis.call('ZADD', KEYS[5], place, user)
  return stateOf(user, place, open and tonumber(redis.call('HGET', KEYS[7], 'stock') or '0') >= 1)
end

for i = FIRST_USER, #ARGV do
  local code, state, place, ahead, orderId, promote, openedAt, drawAdmitted, all, at = one(ARGV[i], i - FIRST_USER)
  out[#out + 1] = code; out[#out + 1] = state; out[#out + 1] = place; out[#out + 1] = ahead; out[#out + 1] = orderId
  out[#out + 1] = promote; out[#out + 1] = openedAt; out[#out + 1] = drawAdmitted; out[#out + 1] = all; out[#out + 1] = at
end
if joinedPre then redis.call('EXPIREAT', KEYS[2], expireAt) end
if joinedLate then
  for k = 1, 5 do
    if k ~= 2 then redis.call('EXPIREAT', KEYS[k], expireAt) end
  end
end
return out
