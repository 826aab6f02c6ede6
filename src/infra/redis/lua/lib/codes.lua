-- The codes a claim is answered with, shared by admit (lib/admission.lua) and by queue-7.lua for
-- the same refusals of a join (lib/queue.lua). AdmitCode in scripts/admission.ts has the same
-- numbers.
local SK_CODE = {
  ADMITTED = 0,
  REPLAYED = 1, -- same idempotency key: the earlier order, no new unit
  MISSING = 2, -- the voucher's state is not in Redis: warm it, then retry
  NOT_STARTED = 3,
  ENDED = 4,
  LIMIT_EXCEEDED = 5,
  SOLD_OUT = 6,
  KEY_REUSED = 7, -- same idempotency key with another quantity
  RATE_LIMITED = 8,
  SEGMENT_SHORT = 9, -- this segment has too few units: borrow from another, then ask again
  UNVERIFIED = 10, -- not verified against the database on this master (lib/master.lua)
}
