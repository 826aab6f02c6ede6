-- admit: atomically admit (or reject) one seckill claim and hand it to the shard's order stream.
-- KEYS[1] voucher hash   {stock, begin, end, limit, inflight, expire, waitcap, gen, seen}; `seen` is
--                        bumped here whenever a user gains an idempotency record or a waitlist place
-- KEYS[2] buyers hash    userId -> units held
-- KEYS[3] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[4] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[5] order stream (shard)
-- KEYS[6] waitlist zset  userId scored by enrolment time (µs)
-- KEYS[7] waitlist hash  userId -> quantity wanted
-- KEYS[8] voucher token bucket  KEYS[9] this user's token bucket for the voucher (lib/bucket.lua)
-- ARGV[1] voucherId  ARGV[2] userId  ARGV[3] orderId (new)  ARGV[4] quantity
-- ARGV[5] idempotency key or ""
-- ARGV[6] voucher rate (tokens/s; 0: off)  ARGV[7] voucher burst  ARGV[8] user rate  ARGV[9] user burst
-- Returns {code, orderId, quantity, waitlisted, closed, version} (the last two only with SOLD_OUT):
--   0 ADMITTED · 1 REPLAYED (same idempotency key: earlier orderId, no new unit)
--   2 MISSING (voucher state not in Redis: warm it, then retry) · 3 NOT_STARTED · 4 ENDED
--   5 LIMIT_EXCEEDED · 6 SOLD_OUT (waitlisted 1 when the user is on the waitlist; closed 1 when no
--   unit is left for anyone and no place on the waitlist either; version "gen.seen") ·
--   7 KEY_REUSED · 8 RATE_LIMITED (quantity = ms until the buckets have a token again)
-- Checks come first and writes last: a rejected claim never changes stock. A claim that reaches
-- the checks has taken a token from each enabled bucket.
--! include lib/admission.lua
--! include lib/bucket.lua
local voucherId, userId, orderId = ARGV[1], ARGV[2], ARGV[3]
local quantity = tonumber(ARGV[4])
local idemKey = ARGV[5]

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'expire', 'waitcap', 'gen', 'seen')
local stock = tonumber(v[1])
if stock == nil then return {2, '', 0, 0} end

local now, nowMicros = sk_now()
local wait = sk_take_tokens(sk_claim_buckets(8, 6), now)
if wait > 0 then return {8, '', wait, 0} end

local idemField = userId .. ':' .. idemKey
if idemKey ~= '' then
  local earlier = redis.call('HGET', KEYS[3], idemField)
  if earlier then
    local sep = string.find(earlier, ':', 1, true)
    local earlierQuantity = tonumber(string.sub(earlier, sep + 1))
    if earlierQuantity ~= quantity then return {7, string.sub(earlier, 1, sep - 1), earlierQuantity, 0} end
    return {1, string.sub(earlier, 1, sep - 1), earlierQuantity, 0}
  end
end

-- SOLD_OUT, telling API processes whether nobody at all can get a unit or a waitlist place now,
-- and which users may hear something else (the version of snapshot-3.lua's answer).
local function soldOut(waitlisted, waitlistFull)
  local closed = 0
  if stock < 1 and waitlistFull then closed = 1 end
  return {6, '', 0, waitlisted, closed, (v[7] or '') .. '.' .. (v[8] or '0')}
end

local held = tonumber(redis.call('HGET', KEYS[2], userId) or '0')
local code = sk_check(stock, v, held, quantity, now)
if code == 6 then
  -- Sold out: enrol the user on the waitlist once (FIFO by enrolment time), while there is room.
  local cap = tonumber(v[6] or '0')
  if cap == 0 then return soldOut(0, true) end
  local waiting = redis.call('ZCARD', KEYS[6])
  if redis.call('ZSCORE', KEYS[6], userId) then return soldOut(1, waiting >= cap) end
  if waiting >= cap then return soldOut(0, true) end
  redis.call('ZADD', KEYS[6], nowMicros, userId)
  redis.call('HSET', KEYS[7], userId, quantity)
  v[8] = redis.call('HINCRBY', KEYS[1], 'seen', 1)
  redis.call('EXPIREAT', KEYS[6], v[5])
  redis.call('EXPIREAT', KEYS[7], v[5])
  return soldOut(1, waiting + 1 >= cap)
end
if code ~= 0 then return {code, '', 0, 0} end

sk_admit(KEYS[1], KEYS[2], KEYS[4], KEYS[5], voucherId, userId, orderId, quantity, now, v[5])
if idemKey ~= '' then
  redis.call('HSET', KEYS[3], idemField, orderId .. ':' .. quantity)
  redis.call('EXPIREAT', KEYS[3], v[5])
  redis.call('HINCRBY', KEYS[1], 'seen', 1)
end
return {0, orderId, quantity, 0}
