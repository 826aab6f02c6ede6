-- admit: atomically admit (or reject) one seckill claim and hand it to the shard's order stream.
-- KEYS[1] voucher hash   {stock, begin, end, limit, inflight, expire, waitcap}
-- KEYS[2] buyers hash    userId -> units held
-- KEYS[3] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[4] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[5] order stream (shard)
-- KEYS[6] waitlist zset  userId scored by enrolment time (µs)
-- KEYS[7] waitlist hash  userId -> quantity wanted
-- ARGV[1] voucherId  ARGV[2] userId  ARGV[3] orderId (new)  ARGV[4] quantity
-- ARGV[5] idempotency key or ""
-- Returns {code, orderId, quantity, waitlisted}:
--   0 ADMITTED · 1 REPLAYED (same idempotency key: earlier orderId, no new unit)
--   2 MISSING (voucher state not in Redis: warm it, then retry) · 3 NOT_STARTED · 4 ENDED
--   5 LIMIT_EXCEEDED · 6 SOLD_OUT (waitlisted 1 when the user is on the waitlist) · 7 KEY_REUSED
-- Checks come first and writes last: a rejected claim never changes stock.
--! include lib/admission.lua
local voucherId, userId, orderId = ARGV[1], ARGV[2], ARGV[3]
local quantity = tonumber(ARGV[4])
local idemKey = ARGV[5]

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'expire', 'waitcap')
local stock = tonumber(v[1])
if stock == nil then return {2, '', 0, 0} end

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

local now, nowMicros = sk_now()
local held = tonumber(redis.call('HGET', KEYS[2], userId) or '0')
local code = sk_check(stock, v, held, quantity, now)
if code == 6 then
  -- Sold out: enrol the user on the waitlist once (FIFO by enrolment time), while there is room.
  local cap = tonumber(v[6] or '0')
  if cap == 0 then return {6, '', 0, 0} end
  if redis.call('ZSCORE', KEYS[6], userId) then return {6, '', 0, 1} end
  if redis.call('ZCARD', KEYS[6]) >= cap then return {6, '', 0, 0} end
  redis.call('ZADD', KEYS[6], nowMicros, userId)
  redis.call('HSET', KEYS[7], userId, quantity)
  redis.call('EXPIREAT', KEYS[6], v[5])
  redis.call('EXPIREAT', KEYS[7], v[5])
  return {6, '', 0, 1}
end
if code ~= 0 then return {code, '', 0, 0} end

sk_admit(KEYS[1], KEYS[2], KEYS[4], KEYS[5], voucherId, userId, orderId, quantity, now, v[5])
if idemKey ~= '' then
  redis.call('HSET', KEYS[3], idemField, orderId .. ':' .. quantity)
  redis.call('EXPIREAT', KEYS[3], v[5])
end
return {0, orderId, quantity, 0}
