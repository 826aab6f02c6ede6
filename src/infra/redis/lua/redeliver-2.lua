-- redeliver: an admitted order whose stream entry was lost gets a new entry, so the pipeline
-- stores it. Only if its in-flight record is still the one observed.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)
-- ARGV[1] orderId  ARGV[2] in-flight record observed ("voucherId|userId|quantity|createdMs|streamId",
--   "|p" after it for a waitlist promotion)
-- Returns SK_APPLIED when redelivered, SK_UNCHANGED when the record changed or is gone (lib/reconcile.lua).
--! include lib/admission.lua
--! include lib/reconcile.lua
local inflightKey, streamKey = KEYS[1], KEYS[2]
local orderId, observed = ARGV[1], ARGV[2]
if redis.call('HGET', inflightKey, orderId) ~= observed then return SK_UNCHANGED end
-- The entry carries the record without its stream id (formats: lib/admission.lua).
local record, mark = observed, ''
if string.sub(record, -#SK_PROMOTED) == SK_PROMOTED then record, mark = string.sub(record, 1, -#SK_PROMOTED - 1), SK_PROMOTED end
local order = string.match(record, '^(.*)|[^|]*$')
redis.call('HSET', inflightKey, orderId, sk_enqueue(streamKey, orderId, order, mark))
return SK_APPLIED
