-- repair: correct a voucher's Redis stock, in-flight counter and buyer counts by the drift that
-- reconciliation confirmed. Corrections are offsets, so traffic that moved the counts since the
-- observation is kept; they apply only to the state that was observed (same builtAt: not rebuilt).
-- Many buyers' offsets come in several calls of a bounded size: offsets add up in any order, so
-- each call is correct alone, and one that finds the state rebuilt applies nothing.
-- KEYS[1] voucher hash  KEYS[2] buyers hash
-- ARGV[1] builtAt observed  ARGV[2] stock offset  ARGV[3] in-flight counter offset
-- ARGV[4..] userId, offset, ... (a count that reaches 0 is removed)
-- Returns 1 when applied, 0 when the state was rebuilt or is gone.
if redis.call('HGET', KEYS[1], 'builtAt') ~= ARGV[1] then return 0 end
redis.call('HINCRBY', KEYS[1], 'stock', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'inflight', ARGV[3])
for i = 4, #ARGV, 2 do
  if redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) <= 0 then redis.call('HDEL', KEYS[2], ARGV[i]) end
end
return 1
