-- settle: finish one stream entry after the database has decided its order.
-- KEYS[1] order stream (shard)  KEYS[2] in-flight hash (shard)  KEYS[3] voucher hash
-- KEYS[4] buyers hash  KEYS[5] dead-letter stream (shard)
-- ARGV[1] consumer group  ARGV[2] stream entry id  ARGV[3] orderId  ARGV[4] userId
-- ARGV[5] quantity  ARGV[6] restore stock (0/1)  ARGV[7] restore buyer count (0/1)
-- ARGV[8] failure reason ("" when the order was stored)  ARGV[9] dead-letter max length
-- Returns 1 when this call removed the in-flight record (and compensated, if asked), 0 when an
-- earlier call already had: the in-flight record is the token that makes compensation happen once.
local settled = 0
if redis.call('HDEL', KEYS[2], ARGV[3]) == 1 then
  settled = 1
  -- A missing voucher hash is rebuilt from the database later; never create a partial one here.
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('HINCRBY', KEYS[3], 'inflight', -1)
    local quantity = tonumber(ARGV[5])
    if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[3], 'stock', quantity) end
    if ARGV[7] == '1' and redis.call('HINCRBY', KEYS[4], ARGV[4], -quantity) <= 0 then
      redis.call('HDEL', KEYS[4], ARGV[4])
    end
  end
end
-- Only the call that acknowledges the entry copies it to the dead letters (racing consumers).
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 1 and ARGV[8] ~= '' then
  local entry = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
  local fields = {}
  if entry[1] then fields = entry[1][2] end
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[9], '*', 'entry', ARGV[2], 'reason', ARGV[8], unpack(fields))
end
return settled
