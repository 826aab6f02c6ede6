-- inspect: the fixed-size part of a voucher segment's Redis state, read atomically, for
-- reconciliation and audit (consistency/observe.ts). What grows with the sale (buyer counts,
-- in-flight records, orders given back) is walked in steps by the caller between two of these
-- reads: a script that read it whole would hold Redis for every other client meanwhile.
-- KEYS[1] voucher hash  KEYS[2] moves out (lent, "toShard|units|ms")  KEYS[3] order stream (shard)
-- Returns {exists 0|1, builtAt, stock, in-flight counter, {moveId, record, ...} lent, moves (bumped
-- by every move step of this segment), the last id the stream has handed out ("0-0" before the
-- first)}. Moves out are few: a record lives from the lend to the receive of one move.
local v = redis.call('HMGET', KEYS[1], 'stock', 'builtAt', 'inflight', 'moves')
if not v[1] then return {0, '', 0, 0, {}, 0, '0-0'} end
local last = '0-0'
if redis.call('EXISTS', KEYS[3]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[3])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
  end
end
return {1, v[2] or '', tonumber(v[1]), tonumber(v[3] or '0'), redis.call('HGETALL', KEYS[2]), tonumber(v[4] or '0'), last}
