-- Shared by admit, restock and requeue (inlined where a script says `--! include lib/admission.lua`):
-- the checks and the writes of one admission, so a waitlist promotion is admitted exactly like a
-- claim. The voucher hash's fields are documented once, at KeySpace.voucher in keys.ts.

-- 0 when the claim may be admitted, else 3 NOT_STARTED · 4 ENDED · 5 LIMIT_EXCEEDED · 6 SOLD_OUT
-- (window first; limit before stock, so a repeat buyer hears LIMIT_EXCEEDED, not SOLD_OUT).
local function sk_check(stock, v, held, quantity, now)
  if now < tonumber(v[2]) then return 3 end
  if now >= tonumber(v[3]) then return 4 end
  if held + quantity > tonumber(v[4]) then return 5 end
  if stock < quantity then return 6 end
  return 0
end

-- The order's part of its stream entry and of its in-flight record (parsed in records.ts):
-- "voucherId|userId|quantity|createdMs".
local function sk_order(voucherId, userId, quantity, now)
  return voucherId .. '|' .. userId .. '|' .. quantity .. '|' .. now
end

-- Ends the entry and the record of a waitlist promotion, so the pipeline writes its `promoted`
-- event with its `stored` one.
local SK_PROMOTED = '|p'

-- Appends an order to the shard's stream and returns its in-flight record. The entry is ONE field
-- d = "orderId|" .. order .. mark (one field is much cheaper for the pipeline to read than one per
-- value); the record, keyed by orderId, is order .. "|streamId" .. mark (requeue-2.lua rebuilds the
-- entry from it). mark: '' or SK_PROMOTED.
local function sk_enqueue(streamKey, orderId, order, mark)
  local streamId = redis.call('XADD', streamKey, '*', 'd', orderId .. '|' .. order .. mark)
  return order .. '|' .. streamId .. mark
end

-- Admits a waitlist promotion (restock-8.lua): takes the units, counts them for the buyer, records
-- the in-flight order and appends it to the shard's stream (the order pipeline stores it).
-- admit-n.lua does the same for a whole batch of claims, with one write per key at the end.
local function sk_admit(voucherKey, buyersKey, inflightKey, streamKey, voucherId, userId, orderId, quantity, now, expireAt)
  redis.call('HINCRBY', voucherKey, 'stock', -quantity)
  redis.call('HINCRBY', voucherKey, 'inflight', 1)
  redis.call('HINCRBY', buyersKey, userId, quantity)
  redis.call('EXPIREAT', buyersKey, expireAt)
  redis.call('HSET', inflightKey, orderId, sk_enqueue(streamKey, orderId, sk_order(voucherId, userId, quantity, now), SK_PROMOTED))
end
