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
-- Returns ten values per buyer (sk_queue_reply, lib/queue.lua), {code, state, place, ahead,
--   orderId, promote, openedAt, drawAdmitted, admitted, now}, code one of SK_QUEUE: IN_QUEUE (the
--   buyer's state follows) · NOT_STARTED (before opensAt) · ENDED · SOLD_OUT (closed) ·
--   NOT_IN_QUEUE (look, never joined); a new buyer is told NOT_STARTED, ENDED or SOLD_OUT, a buyer
--   who joined before always hears their state. state prequeue | waiting | admitted | closed;
--   place and ahead '' until the draw placed everyone; promote 1 when units are left for the next
--   places (the caller promotes them: restock-8.lua); openedAt '' until the draw's admissions
--   are done; admitted: places admitted so far.
--! include lib/time.lua
--! include lib/queue.lua
local queueKey, prequeueKey, lateKey, placesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waitingKey, admittedKey, voucherKey = KEYS[5], KEYS[6], KEYS[7]
local join = ARGV[1] == 'join'
local opensAt, beginAt, endAt, expireAt = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local FIRST_USER = 6
local now, nowMicros = sk_now()
local frozen, entrants, placedFlag, openFlag, closed, drawAdmitted, openedAt, admitting = unpack(redis.call(
  'HMGET', queueKey, 'frozen', 'n', 'placed', 'open', 'closed', 'drawAdmitted', 'openedAt', 'admitting'))
local placed, open = placedFlag == '1', openFlag == '1'
local admitted = redis.call('HLEN', admittedKey)
local joinedPre, joinedLate = false, false

-- A buyer in the queue: IN_QUEUE and their standing (sk_queue_reply).
local function inQueue(state, place, ahead, orderId, promote)
  return SK_QUEUE.IN_QUEUE, {
    state = state,
    place = place,
    ahead = ahead,
    orderId = orderId,
    promote = promote,
    openedAt = openedAt,
    drawAdmitted = tonumber(drawAdmitted or '0'),
    admitted = admitted,
  }
end

local function stateOf(user, place, promote)
  if not placed then return inQueue('prequeue') end
  local orderId = redis.call('HGET', admittedKey, user)
  if orderId then return inQueue('admitted', place, 0, orderId) end
  if closed or now >= endAt then return inQueue('closed', place) end
  local ahead = redis.call('ZRANK', waitingKey, user)
  if ahead then return inQueue('waiting', place, ahead, nil, promote) end
  -- One of the first places, while the draw admits them.
  if not open and place <= tonumber(admitting or '0') then return inQueue('waiting', place, 0) end
  return inQueue('closed', place)
end

-- Buyer `user`, the i-th of the batch (from 0); returns its code and standing.
local function one(user, i)
  local place = redis.call('HGET', placesKey, user)
  if place then return stateOf(user, tonumber(place), false) end
  if redis.call('ZSCORE', prequeueKey, user) or redis.call('ZSCORE', lateKey, user) then return inQueue('prequeue') end
  if not join then return SK_QUEUE.NOT_IN_QUEUE end
  if now < opensAt then return SK_QUEUE.NOT_STARTED end
  if now >= endAt then return SK_QUEUE.ENDED end
  if closed then return SK_QUEUE.SOLD_OUT end

  if frozen ~= '1' and now < beginAt then
    -- Buyers of one batch share a Redis time: + i µs keeps their join times apart, in order.
    redis.call('ZADD', prequeueKey, tonumber(nowMicros) + i, user)
    joinedPre = true
    return inQueue('prequeue')
  end
  local seq = redis.call('HINCRBY', queueKey, 'late', 1)
  redis.call('ZADD', lateKey, seq, user)
  joinedLate = true
  if not placed then return inQueue('prequeue') end -- the draw places it after the drawn ones
  place = tonumber(entrants) + seq
  redis.call('HSET', placesKey, user, place)
  redis.call('ZADD', waitingKey, place, user)
  return stateOf(user, place, open and tonumber(redis.call('HGET', voucherKey, 'stock') or '0') >= 1)
end

local out = {}
for i = FIRST_USER, #ARGV do sk_queue_reply(out, now, one(ARGV[i], i - FIRST_USER)) end
if joinedPre then redis.call('EXPIREAT', prequeueKey, expireAt) end
if joinedLate then
  for _, key in ipairs({queueKey, lateKey, placesKey, waitingKey}) do redis.call('EXPIREAT', key, expireAt) end
end
return out
