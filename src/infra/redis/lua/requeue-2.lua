-- requeue: an admitted order whose stream entry was lost gets a new entry, so the pipeline
-- stores it. Only if its in-flight record is still the one observed.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)
-- ARGV[1] orderId  ARGV[2] in-flight record observed ("voucherId|userId|quantity|createdMs|streamId",
--   "|p" after it for a waitlist promotion)
-- Returns 1 when requeued, 0 when the record changed or is gone.
--! include lib/admission.lua
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
-- The entry carries the record without its stream id (formats: lib/admission.lua).
local record, promoted = ARGV[2], false
if string.sub(record, -2) == '|p' then record, promoted = string.sub(record, 1, -3), true end
local order = string.match(record, '^(.*)|[^|]*$')
local streamId
if promoted then
  local voucherId, userId, quantity, createdMs = string.match(order, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  streamId = sk_promoted_entry(KEYS[2], ARGV[1], voucherId, userId, quantity, createdMs)
  redis.call('HSET', KEYS[1], ARGV[1], order .. '|' .. streamId .. '|p')
else
  streamId = redis.call('XADD', KEYS[2], '*', 'd', ARGV[1] .. '|' .. order)
  redis.call('HSET', KEYS[1], ARGV[1], order .. '|' .. streamId)
end
return 1
