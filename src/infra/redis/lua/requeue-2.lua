-- requeue: an admitted order whose stream entry was lost gets a new entry, so the pipeline
-- stores it. Only if its in-flight record is still the one observed.
-- KEYS[1] in-flight hash (shard)  KEYS[2] order stream (shard)
-- ARGV[1] orderId  ARGV[2] in-flight record observed ("voucherId|userId|quantity|createdMs|streamId")
-- Returns 1 when requeued, 0 when the record changed or is gone.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local f = {}
for part in string.gmatch(ARGV[2], '([^|]+)') do f[#f + 1] = part end
local streamId = redis.call('XADD', KEYS[2], '*', 'o', ARGV[1], 'v', f[1], 'u', f[2], 'q', f[3], 't', f[4])
redis.call('HSET', KEYS[1], ARGV[1], f[1] .. '|' .. f[2] .. '|' .. f[3] .. '|' .. f[4] .. '|' .. streamId)
return 1
