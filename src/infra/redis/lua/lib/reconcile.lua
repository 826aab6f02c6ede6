-- The answers of the scripts that read and correct what reconciliation finds (inspect, repair,
-- redeliver, adopt), decoded in scripts/reconcile.ts.

-- repair, redeliver and adopt: SK_APPLIED when they changed something, SK_UNCHANGED when they found
-- nothing to change (the state was rebuilt, the record changed or is there already).
local SK_APPLIED, SK_UNCHANGED = 1, 0

-- inspect-3.lua's first value: whether the segment has state.
local SK_ABSENT, SK_PRESENT = 0, 1

-- inspect-3.lua's answer: {SK_ABSENT} when head is nil (no state), else {SK_PRESENT, builtAt,
-- stock, in-flight counter, {moveId, record, ...} lent, moves, last stream id}, from head's fields
-- of those names.
local function sk_segment_head(head)
  if not head then return {SK_ABSENT} end
  return {SK_PRESENT, head.builtAt, head.stock, head.inflightCounter, head.lent, head.moves, head.lastStreamId}
end
