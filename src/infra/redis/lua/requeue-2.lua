-- requeue: an admitted order whose stream entry was lost gets a new entry, so the pipeline
-- stores it. Only if its in-flight record is still the one observed.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)
-- ARGV[1] orderId  ARGV[2] in-flight record observed ("voucherId|userId|quantity|createdMs[|p]|streamId")
-- Returns 1 when requeued, 0 when the record changed or is gone.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
-- The entry carries the record without its stream id (format: lib/admission.lua sk_admit).
local order = string.match(ARGV[2], '^(.*)|[^|]*$')
local streamId = redis.call('XADD', KEYS[2], '*', 'd', ARGV[1] .. '|' .. order)
redis.call('HSET', KEYS[1], ARGV[1], order .. '|' .. streamId)
return 1
