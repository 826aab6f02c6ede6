-- forget: the lender's record of a finished move, dropped once the receiver has the units (the
-- receiver keeps its own record, so no later receive of this move adds them again).
-- KEYS[1] voucher hash (the lender)  KEYS[2] moves out
-- ARGV[1] moveId
-- Bumps the lender's moves (KeySpace.voucher in keys.ts) when it drops the record.
-- Returns 1 when dropped, 0 when it was not there.
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HINCRBY', KEYS[1], 'moves', 1) end
return 1
