-- Shared by admit, restock and redeliver (inlined where a script says `--! include lib/admission.lua`):
-- a claim's answer, the checks and the writes of one admission, so a waitlist promotion is
-- admitted exactly like a claim. The voucher hash's fields are documented once, at
-- KeySpace.voucher in keys.ts.
--! include lib/codes.lua

-- Appends one claim's answer to `out`: six values, read by admitResult in scripts/admission.ts.
-- answer (optional): orderId (the new or the earlier order), quantity (its units; RATE_LIMITED:
-- the ms until the buckets have a token again), waitlisted and closed (SOLD_OUT only: the user is
-- on the waitlist; no unit is left for anyone and no waitlist place either) and version (SOLD_OUT:
-- "builtAt.listAdditions", the version of the sold-out snapshot, read with closed).
local function sk_claim_reply(out, code, answer)
  answer = answer or {}
  local n = #out
  out[n + 1] = code
  out[n + 2] = answer.orderId or ''
  out[n + 3] = answer.quantity or 0
  out[n + 4] = answer.waitlisted and 1 or 0
  out[n + 5] = answer.closed and 1 or 0
  out[n + 6] = answer.version or ''
end

-- The voucher hash at `voucherKey` by name (numbers as numbers), or nil when the state is missing.
local function sk_voucher_state(voucherKey)
  local stock, beginAt, endAt, limit, expireAt, waitCap, builtAt, listAdditions, inflight, verifiedOn = unpack(redis.call(
    'HMGET', voucherKey, 'stock', 'begin', 'end', 'limit', 'expire', 'waitcap', 'builtAt', 'listAdditions', 'inflight', 'verifiedOn'))
  if not stock then return nil end
  return {
    stock = tonumber(stock),
    beginAt = tonumber(beginAt),
    endAt = tonumber(endAt),
    limit = tonumber(limit),
    expireAt = expireAt, -- unix seconds, as EXPIREAT takes it
    waitCap = tonumber(waitCap or '0'),
    builtAt = builtAt or '',
    listAdditions = tonumber(listAdditions or '0'),
    inflight = tonumber(inflight or '0'),
    verifiedOn = verifiedOn,
  }
end

-- ADMITTED when `quantity` more units for a buyer holding `held` may be admitted from `stock`,
-- else NOT_STARTED, ENDED, LIMIT_EXCEEDED or SOLD_OUT (window first; limit before stock, so a
-- repeat buyer hears LIMIT_EXCEEDED, not SOLD_OUT). voucher: sk_voucher_state's.
local function sk_check(voucher, stock, held, quantity, now)
  if now < voucher.beginAt then return SK_CODE.NOT_STARTED end
  if now >= voucher.endAt then return SK_CODE.ENDED end
  if held + quantity > voucher.limit then return SK_CODE.LIMIT_EXCEEDED end
  if stock < quantity then return SK_CODE.SOLD_OUT end
  return SK_CODE.ADMITTED
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
-- d = "orderId|" .. order .. mark, then "#" .. key when the claim had an Idempotency-Key (one field
-- is much cheaper for the pipeline to read than one per value; keys are [A-Za-z0-9_-], so "#"
-- cannot be part of one): the database keeps the key with the order, and verification after a
-- master change gives a retry its order back from there. The record, keyed by orderId, is order ..
-- "|streamId" .. mark, without the key (redeliver-2.lua rebuilds the entry from it). mark: '' or
-- SK_PROMOTED; key: nil or '' when none. A traced claim's entry has a second field, t = the W3C
-- traceparent of its span (tracing/spans.ts), so the batch that stores it joins the claim's trace.
local function sk_enqueue(streamKey, orderId, order, mark, key, trace)
  local keyed = (key and key ~= '') and ('#' .. key) or ''
  local data = orderId .. '|' .. order .. mark .. keyed
  local streamId
  if trace and trace ~= '' then
    streamId = redis.call('XADD', streamKey, '*', 'd', data, 't', trace)
  else
    streamId = redis.call('XADD', streamKey, '*', 'd', data)
  end
  return order .. '|' .. streamId .. mark
end

-- Admits a waitlist promotion (restock-8.lua): takes the units, counts them for the buyer, records
-- the in-flight order and appends it to the shard's stream (the order pipeline stores it).
-- admit-n.lua does the same for a whole batch of claims, with one write per key at the end.
-- segment: the keys {voucher, buyers, inflight, stream}; expireAt: the voucher's; trace: the
-- traceparent its entry carries, or "".
local function sk_admit(segment, voucherId, userId, orderId, quantity, now, expireAt, trace)
  redis.call('HINCRBY', segment.voucher, 'stock', -quantity)
  redis.call('HINCRBY', segment.voucher, 'inflight', 1)
  redis.call('HINCRBY', segment.buyers, userId, quantity)
  redis.call('EXPIREAT', segment.buyers, expireAt)
  local record = sk_enqueue(segment.stream, orderId, sk_order(voucherId, userId, quantity, now), SK_PROMOTED, nil, trace)
  redis.call('HSET', segment.inflight, orderId, record)
end
