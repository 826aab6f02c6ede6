-- restore: an order the database acknowledged and then lost (a failover to a standby that had not
-- received it) is admitted again as it was: a new stream entry and its in-flight record, so the
-- pipeline stores it. Its units and its buyer's count never left Redis. Only when no in-flight
-- record exists (it is not on its way already) and the voucher's state does (a rebuilt state is
-- the database's own).
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)  KEYS[3] voucher hash (in-flight counter)
-- ARGV[1] orderId  ARGV[2] order ("voucherId|userId|quantity|createdMs")  ARGV[3] mark ("" or "|p")
-- ARGV[4] the claim's Idempotency-Key, "" when none  ARGV[5] its traceparent, "" when none
-- Returns SK_APPLIED when restored, SK_UNCHANGED otherwise (lib/reconcile.lua).
--! include lib/admission.lua
--! include lib/reconcile.lua
local inflightKey, streamKey, voucherKey = KEYS[1], KEYS[2], KEYS[3]
local orderId, order, mark, key, trace = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('HEXISTS', inflightKey, orderId) == 1 then return SK_UNCHANGED end
if redis.call('EXISTS', voucherKey) == 0 then return SK_UNCHANGED end
redis.call('HSET', inflightKey, orderId, sk_enqueue(streamKey, orderId, order, mark, key, trace))
redis.call('HINCRBY', voucherKey, 'inflight', 1)
return SK_APPLIED
