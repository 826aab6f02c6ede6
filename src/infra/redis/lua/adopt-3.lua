-- adopt: a stream entry not yet stored whose in-flight record was lost gets its record back, so
-- reads, rebuilds and the in-flight count see the order again. Only while the entry still exists
-- and no record does.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)  KEYS[3] voucher hash (in-flight counter)
-- ARGV[1] orderId  ARGV[2] stream entry id  ARGV[3] record ("voucherId|userId|quantity|createdMs|streamId[|p]")
-- Returns 1 when adopted, 0 otherwise.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
if #redis.call('XRANGE', KEYS[2], ARGV[2], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[3], 'inflight', 1)
return 1
