-- admit: atomically admit (or reject) one seckill claim and hand it to the shard's order stream.
-- KEYS[1] voucher hash   {stock, begin, end, limit, inflight, expire}
-- KEYS[2] buyers hash    userId -> units held
-- KEYS[3] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[4] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[5] order stream (shard)
-- ARGV[1] voucherId  ARGV[2] userId  ARGV[3] orderId (new)  ARGV[4] quantity
-- ARGV[5] idempotency key or ""
-- Returns {code, orderId, quantity}:
--   0 ADMITTED · 1 REPLAYED (same idempotency key: earlier orderId, no new unit)
--   2 MISSING (voucher state not in Redis: warm it, then retry) · 3 NOT_STARTED · 4 ENDED
--   5 LIMIT_EXCEEDED · 6 SOLD_OUT · 7 KEY_REUSED (same key, different quantity)
-- Checks come first and writes last: a rejected claim changes nothing.
local voucherId, userId, orderId = ARGV[1], ARGV[2], ARGV[3]
local quantity = tonumber(ARGV[4])
local idemKey = ARGV[5]

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'expire')
local stock = tonumber(v[1])
if stock == nil then return {2, '', 0} end

local idemField = userId .. ':' .. idemKey
if idemKey ~= '' then
  local earlier = redis.call('HGET', KEYS[3], idemField)
  if earlier then
    local sep = string.find(earlier, ':', 1, true)
    local earlierQuantity = tonumber(string.sub(earlier, sep + 1))
    if earlierQuantity ~= quantity then return {7, string.sub(earlier, 1, sep - 1), earlierQuantity} end
    return {1, string.sub(earlier, 1, sep - 1), earlierQuantity}
  end
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(v[2]) then return {3, '', 0} end
if now >= tonumber(v[3]) then return {4, '', 0} end

local held = tonumber(redis.call('HGET', KEYS[2], userId) or '0')
if held + quantity > tonumber(v[4]) then return {5, '', 0} end
if stock < quantity then return {6, '', 0} end

redis.call('HINCRBY', KEYS[1], 'stock', -quantity)
redis.call('HINCRBY', KEYS[1], 'inflight', 1)
redis.call('HINCRBY', KEYS[2], userId, quantity)
redis.call('EXPIREAT', KEYS[2], v[5])
local streamId = redis.call('XADD', KEYS[5], '*', 'o', orderId, 'v', voucherId, 'u', userId, 'q', quantity, 't', now)
redis.call('HSET', KEYS[4], orderId, voucherId .. '|' .. userId .. '|' .. quantity .. '|' .. now .. '|' .. streamId)
if idemKey ~= '' then
  redis.call('HSET', KEYS[3], idemField, orderId .. ':' .. quantity)
  redis.call('EXPIREAT', KEYS[3], v[5])
end
return {0, orderId, quantity}
