-- settle: finish a batch of stream entries of one shard after the database has decided them.
-- Called with a variable number of keys (numKeys given per call):
-- KEYS[1] order stream (shard)  KEYS[2] in-flight hash (shard)  KEYS[3] dead-letter stream (shard)
-- KEYS[4..] voucher hash, buyers hash, voucher hash, buyers hash, ... (every voucher of the batch)
-- ARGV[1] consumer group  ARGV[2] dead-letter max length
-- then one value per order, "streamId|orderId|userId|quantity|restoreStock|restoreBuyer|index|reason":
--   restore stock / buyer count 0 or 1, index in KEYS of its voucher hash, failure reason ("" when
--   stored; last, so it may hold any character)
-- Returns one flag per order: 1 when this call removed its in-flight record (and compensated, if
-- asked), 0 when an earlier call already had. The in-flight record is the token that makes
-- compensation happen once; only the call that acknowledges an entry copies it to dead letters
-- (and counts it in the voucher's `dead` field).
local ORDER = '^([^|]+)|([^|]+)|([^|]+)|([^|]+)|([01])|([01])|(%d+)|(.*)$'
-- Every argument is checked before anything is written: a bad one fails the call as a whole.
for i = 3, #ARGV do
  if not string.match(ARGV[i], ORDER) then error('settle: malformed order argument ' .. string.sub(ARGV[i], 1, 80)) end
end
local result = {}
local settledPerVoucher = {}
local storedIds = {}
for i = 3, #ARGV do
  local streamId, orderId, userId, q, restoreStock, restoreBuyer, index, reason = string.match(ARGV[i], ORDER)
  local quantity = tonumber(q)
  local voucherIndex = tonumber(index)
  local voucherKey = KEYS[voucherIndex]
  local settled = 0
  if redis.call('HDEL', KEYS[2], orderId) == 1 then
    settled = 1
    settledPerVoucher[voucherIndex] = (settledPerVoucher[voucherIndex] or 0) + 1
    -- A missing voucher hash is rebuilt from the database later; never create a partial one here.
    if (restoreStock == '1' or restoreBuyer == '1') and redis.call('EXISTS', voucherKey) == 1 then
      if restoreStock == '1' then redis.call('HINCRBY', voucherKey, 'stock', quantity) end
      if restoreBuyer == '1' and redis.call('HINCRBY', KEYS[voucherIndex + 1], userId, -quantity) <= 0 then
        redis.call('HDEL', KEYS[voucherIndex + 1], userId)
      end
    end
  end
  if reason == '' then
    storedIds[#storedIds + 1] = streamId
  elseif redis.call('XACK', KEYS[1], ARGV[1], streamId) == 1 then
    local entry = redis.call('XRANGE', KEYS[1], streamId, streamId)
    local fields = {}
    if entry[1] then fields = entry[1][2] end
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'entry', streamId, 'reason', reason, unpack(fields))
    if redis.call('EXISTS', voucherKey) == 1 then redis.call('HINCRBY', voucherKey, 'dead', 1) end
  end
  result[#result + 1] = settled
end
-- Per voucher and per batch rather than per order: the same effect with far fewer commands.
for voucherIndex, count in pairs(settledPerVoucher) do
  if redis.call('EXISTS', KEYS[voucherIndex]) == 1 then redis.call('HINCRBY', KEYS[voucherIndex], 'inflight', -count) end
end
for i = 1, #storedIds, 1000 do
  redis.call('XACK', KEYS[1], ARGV[1], unpack(storedIds, i, math.min(i + 999, #storedIds)))
end
return result
