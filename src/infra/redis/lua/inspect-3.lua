-- inspect: the fixed-size part of a voucher segment's Redis state, read atomically, for
-- reconciliation and audit (consistency/observe.ts). What grows with the sale (buyer counts,
-- in-flight records, orders given back) is walked in steps by the caller between two of these
-- reads: a script that read it whole would hold Redis for every other client meanwhile.
-- KEYS[1] voucher hash  KEYS[2] moves out (lent, "toShard|units|ms")  KEYS[3] order stream (shard)
-- Returns {SK_ABSENT} when the segment has no state, else (sk_segment_head, lib/reconcile.lua)
-- {SK_PRESENT, builtAt, stock, in-flight counter, {moveId, record, ...} lent, moves (bumped by
-- every move step of this segment), the last id the stream has handed out ("0-0" before the
-- first)}. Moves out are few: a record lives from the lend to the receive of one move.
--! include lib/reconcile.lua
local voucherKey, movesOutKey, streamKey = KEYS[1], KEYS[2], KEYS[3]
local stock, builtAt, inflight, moves = unpack(redis.call('HMGET', voucherKey, 'stock', 'builtAt', 'inflight', 'moves'))
if not stock then return sk_segment_head(nil) end
local lastStreamId = '0-0'
if redis.call('EXISTS', streamKey) == 1 then
  local info = redis.call('XINFO', 'STREAM', streamKey)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then lastStreamId = info[i + 1] end
  end
end
return sk_segment_head({
  builtAt = builtAt or '',
  stock = tonumber(stock),
  inflightCounter = tonumber(inflight or '0'),
  lent = redis.call('HGETALL', movesOutKey),
  moves = tonumber(moves or '0'),
  lastStreamId = lastStreamId,
})
