-- settle: finish a batch of stream entries of one shard after the database has decided them.
-- Called with a variable number of keys (numKeys given per call):
-- KEYS[1] order stream (shard)  KEYS[2] in-flight hash (shard)  KEYS[3] dead-letter stream (shard)
-- KEYS[4..] voucher hash, buyers hash, voucher hash, buyers hash, ... (every voucher of the batch)
-- ARGV[1] consumer group  ARGV[2] dead-letter max length
-- then one value per order, "streamId|orderId|userId|quantity|restoreStock|restoreBuyer|index|reason":
--   restore stock / buyer count 0 or 1, index in KEYS of its voucher hash, failure reason ("" when
--   stored; last, so it may hold any character)
-- Returns one flag per order: SETTLED_NOW (1) when this call removed its in-flight record (and
-- compensated, if asked), SETTLED_BEFORE (0) when an earlier call already had. The in-flight
-- record is the token that makes compensation happen once; only the call that acknowledges an
-- entry copies it to dead letters (and counts it in the voucher's `dead` field).
local SETTLED_NOW, SETTLED_BEFORE = 1, 0
local streamKey, inflightKey, deadLettersKey = KEYS[1], KEYS[2], KEYS[3]
local group, deadLettersMaxLen = ARGV[1], ARGV[2]
local FIRST_ORDER = 3
local ORDER = '^([^|]+)|([^|]+)|([^|]+)|([^|]+)|([01])|([01])|(%d+)|(.*)$'
local ACK_STEP = 1000 -- stream ids per XACK
-- Every argument is checked before anything is written: a bad one fails the call as a whole.
for i = FIRST_ORDER, #ARGV do
  if not string.match(ARGV[i], ORDER) then error('settle: malformed order argument ' .. string.sub(ARGV[i], 1, 80)) end
end

-- Gives the units of a settled order back to its voucher's stock and/or takes them off its
-- buyer's count. A missing voucher hash is rebuilt from the database later; never create a
-- partial one here.
local function compensate(voucherIndex, userId, quantity, restoreStock, restoreBuyer)
  local voucherKey, buyersKey = KEYS[voucherIndex], KEYS[voucherIndex + 1]
  if not (restoreStock or restoreBuyer) or redis.call('EXISTS', voucherKey) == 0 then return end
  if restoreStock then redis.call('HINCRBY', voucherKey, 'stock', quantity) end
  if restoreBuyer and redis.call('HINCRBY', buyersKey, userId, -quantity) <= 0 then redis.call('HDEL', buyersKey, userId) end
end

local result = {}
local settledPerVoucher = {}
local storedIds = {}
for i = FIRST_ORDER, #ARGV do
  local streamId, orderId, userId, quantity, restoreStock, restoreBuyer, index, reason = string.match(ARGV[i], ORDER)
  local voucherIndex = tonumber(index)
  local voucherKey = KEYS[voucherIndex]
  local settled = SETTLED_BEFORE
  if redis.call('HDEL', inflightKey, orderId) == 1 then
    settled = SETTLED_NOW
    settledPerVoucher[voucherIndex] = (settledPerVoucher[voucherIndex] or 0) + 1
    compensate(voucherIndex, userId, tonumber(quantity), restoreStock == '1', restoreBuyer == '1')
  end
  if reason == '' then
    storedIds[#storedIds + 1] = streamId
  elseif redis.call('XACK', streamKey, group, streamId) == 1 then
    local entry = redis.call('XRANGE', streamKey, streamId, streamId)
    local fields = {}
    if entry[1] then fields = entry[1][2] end
    redis.call('XADD', deadLettersKey, 'MAXLEN', '~', deadLettersMaxLen, '*', 'entry', streamId, 'reason', reason, unpack(fields))
    if redis.call('EXISTS', voucherKey) == 1 then redis.call('HINCRBY', voucherKey, 'dead', 1) end
  end
  result[#result + 1] = settled
end
-- Per voucher and per batch rather than per order: the same effect with far fewer commands.
for voucherIndex, count in pairs(settledPerVoucher) do
  if redis.call('EXISTS', KEYS[voucherIndex]) == 1 then redis.call('HINCRBY', KEYS[voucherIndex], 'inflight', -count) end
end
for i = 1, #storedIds, ACK_STEP do
  redis.call('XACK', streamKey, group, unpack(storedIds, i, math.min(i + ACK_STEP - 1, #storedIds)))
end
return result
