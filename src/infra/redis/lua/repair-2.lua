-- repair: correct a voucher's Redis stock, in-flight counter and buyer counts by the drift that
-- reconciliation confirmed. Corrections are offsets, so traffic that moved the counts since the
-- observation is kept; they apply only to the state that was observed (same builtAt: not rebuilt).
-- Many buyers' offsets come in several calls of a bounded size: offsets add up in any order, so
-- each call is correct alone, and one that finds the state rebuilt applies nothing.
-- KEYS[1] voucher hash  KEYS[2] buyers hash
-- ARGV[1] builtAt observed  ARGV[2] stock offset  ARGV[3] in-flight counter offset
-- ARGV[4..] userId, offset, ... (a count that reaches 0 is removed)
-- Returns SK_APPLIED, or SK_UNCHANGED when the state was rebuilt or is gone (lib/reconcile.lua).
--! include lib/reconcile.lua
local voucherKey, buyersKey = KEYS[1], KEYS[2]
local builtAt, stockOffset, inflightOffset = ARGV[1], ARGV[2], ARGV[3]
local FIRST_BUYER = 4
if redis.call('HGET', voucherKey, 'builtAt') ~= builtAt then return SK_UNCHANGED end
redis.call('HINCRBY', voucherKey, 'stock', stockOffset)
redis.call('HINCRBY', voucherKey, 'inflight', inflightOffset)
for i = FIRST_BUYER, #ARGV, 2 do
  local userId, offset = ARGV[i], ARGV[i + 1]
  if redis.call('HINCRBY', buyersKey, userId, offset) <= 0 then redis.call('HDEL', buyersKey, userId) end
end
return SK_APPLIED
