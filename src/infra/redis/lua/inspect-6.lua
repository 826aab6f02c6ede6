-- inspect: one atomic read of a voucher segment's Redis state, for reconciliation and audit.
-- KEYS[1] voucher hash  KEYS[2] buyers hash  KEYS[3] released hash (orders given back)
-- KEYS[4] in-flight hash (shard)  KEYS[5] moves out (lent, "toShard|units|ms")  KEYS[6] moves in
-- ARGV[1] voucherId
-- Returns {exists 0|1, builtAt, stock, in-flight counter, {userId, units, ...}, {released orderId, ...},
--   {orderId, record, ...} of this voucher's in-flight orders, {moveId, record, ...} lent,
--   {moveId, ...} received, moves (bumped by every move step of this segment)}.
-- The in-flight hash holds the orders of every voucher of the shard that are not stored yet:
-- normally few, since the pipeline stores them within milliseconds.
local v = redis.call('HMGET', KEYS[1], 'stock', 'builtAt', 'inflight', 'moves')
if not v[1] then return {0, '', 0, 0, {}, {}, {}, {}, {}, 0} end
local prefix = ARGV[1] .. '|'
local all = redis.call('HGETALL', KEYS[4])
local mine = {}
for i = 1, #all, 2 do
  if string.sub(all[i + 1], 1, #prefix) == prefix then
    mine[#mine + 1] = all[i]
    mine[#mine + 1] = all[i + 1]
  end
end
return {1, v[2] or '', tonumber(v[1]), tonumber(v[3] or '0'), redis.call('HGETALL', KEYS[2]), redis.call('HKEYS', KEYS[3]), mine,
  redis.call('HGETALL', KEYS[5]), redis.call('HKEYS', KEYS[6]), tonumber(v[4] or '0')}
