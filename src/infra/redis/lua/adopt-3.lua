-- adopt: a stream entry not yet stored whose in-flight record was lost gets its record back, so
-- reads, rebuilds and the in-flight count see the order again. Only while the entry still exists
-- and no record does.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)  KEYS[3] voucher hash (in-flight counter)
-- ARGV[1] orderId  ARGV[2] stream entry id  ARGV[3] record ("voucherId|userId|quantity|createdMs|streamId[|p]")
-- Returns SK_APPLIED when adopted, SK_UNCHANGED otherwise (lib/reconcile.lua).
--! include lib/reconcile.lua
local inflightKey, streamKey, voucherKey = KEYS[1], KEYS[2], KEYS[3]
local orderId, streamId, record = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HEXISTS', inflightKey, orderId) == 1 then return SK_UNCHANGED end
if #redis.call('XRANGE', streamKey, streamId, streamId) == 0 then return SK_UNCHANGED end
redis.call('HSET', inflightKey, orderId, record)
redis.call('HINCRBY', voucherKey, 'inflight', 1)
return SK_APPLIED
