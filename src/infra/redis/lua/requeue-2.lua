-- requeue: an admitted order whose stream entry was lost gets a new entry, so the pipeline
-- stores it. Only if its in-flight record is still the one observed.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)
-- ARGV[1] orderId  ARGV[2] in-flight record observed ("voucherId|userId|quantity|createdMs|streamId",
--   "|p" after it for a waitlist promotion)
-- Returns 1 when requeued, 0 when the record changed or is gone.
--! include lib/admission.lua
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
-- The entry carries the record without its stream id (formats: lib/admission.lua).
local record, mark = ARGV[2], ''
if string.sub(record, -#SK_PROMOTED) == SK_PROMOTED then record, mark = string.sub(record, 1, -#SK_PROMOTED - 1), SK_PROMOTED end
local order = string.match(record, '^(.*)|[^|]*$')
redis.call('HSET', KEYS[1], ARGV[1], sk_enqueue(KEYS[2], ARGV[1], order, mark))
return 1
