-- Shared by admit and restock (inlined where a script says `--! include lib/admission.lua`):
-- the checks and the writes of one admission, so a waitlist promotion is admitted exactly like a
-- claim. Voucher hash fields: stock, begin, end, limit (per user), expire (unix s), waitcap, gen
-- (when this state was built: reconciliation repairs only the state it observed).

-- 0 when the claim may be admitted, else 3 NOT_STARTED · 4 ENDED · 5 LIMIT_EXCEEDED · 6 SOLD_OUT
-- (window first; limit before stock, so a repeat buyer hears LIMIT_EXCEEDED, not SOLD_OUT).
local function sk_check(stock, v, held, quantity, now)
  if now < tonumber(v[2]) then return 3 end
  if now >= tonumber(v[3]) then return 4 end
  if held + quantity > tonumber(v[4]) then return 5 end
  if stock < quantity then return 6 end
  return 0
end

-- The order's part of its stream entry and of its in-flight record.
-- Stream entry: ONE field d = "orderId|voucherId|userId|quantity|createdMs" (one field is much
-- cheaper for the pipeline to read than five). In-flight record, keyed by orderId:
-- "voucherId|userId|quantity|createdMs|streamId" (requeue-2.lua rebuilds the entry from it).
local function sk_order(voucherId, userId, quantity, now)
  return voucherId .. '|' .. userId .. '|' .. quantity .. '|' .. now
end

-- A waitlist promotion is marked, so the pipeline writes its `promoted` event with its `stored`
-- one: its entry has the five fields o v u q t and p = 1, its record ends in "|p". Workers of the
-- release before read both as an ordinary order (they ignore the extra field and part), so a
-- rolling upgrade stores every promotion (sk_promoted_entry is requeue-2.lua's too).
local function sk_promoted_entry(streamKey, orderId, voucherId, userId, quantity, createdMs)
  return redis.call('XADD', streamKey, '*', 'o', orderId, 'v', voucherId, 'u', userId, 'q', quantity, 't', createdMs, 'p', '1')
end

-- Admits a waitlist promotion (restock-7.lua): takes the units, counts them for the buyer, records
-- the in-flight order and appends it to the shard's stream (the order pipeline stores it).
-- admit-n.lua does the same for a whole batch of claims, with one write per key at the end.
local function sk_admit(voucherKey, buyersKey, inflightKey, streamKey, voucherId, userId, orderId, quantity, now, expireAt)
  redis.call('HINCRBY', voucherKey, 'stock', -quantity)
  redis.call('HINCRBY', voucherKey, 'inflight', 1)
  redis.call('HINCRBY', buyersKey, userId, quantity)
  redis.call('EXPIREAT', buyersKey, expireAt)
  local streamId = sk_promoted_entry(streamKey, orderId, voucherId, userId, quantity, now)
  redis.call('HSET', inflightKey, orderId, sk_order(voucherId, userId, quantity, now) .. '|' .. streamId .. '|p')
end
