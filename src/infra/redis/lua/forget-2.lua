-- forget: the lender's record of a finished move, dropped once the receiver has the units (the
-- receiver keeps its own record, so no later receive of this move adds them again).
-- KEYS[1] voucher hash (the lender)  KEYS[2] moves out
-- ARGV[1] moveId
-- Bumps the lender's moves (KeySpace.voucher in keys.ts) when it drops the record.
-- Returns DROPPED (1) when dropped, NOT_THERE (0) when it was not there.
local DROPPED, NOT_THERE = 1, 0
local voucherKey, movesOutKey = KEYS[1], KEYS[2]
local moveId = ARGV[1]
if redis.call('HDEL', movesOutKey, moveId) == 0 then return NOT_THERE end
if redis.call('EXISTS', voucherKey) == 1 then redis.call('HINCRBY', voucherKey, 'moves', 1) end
return DROPPED
