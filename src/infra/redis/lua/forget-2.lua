-- forget: a finished move's record, dropped: the lender's (third step, once the receiver has the
-- units) or the receiver's (fourth, once the lender's is gone, so no retry can add them again).
-- KEYS[1] voucher hash  KEYS[2] moves out (third step) or moves in (fourth)
-- ARGV[1] moveId
-- Returns 1 when dropped, 0 when it was not there.
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HINCRBY', KEYS[1], 'mv', 1) end
return 1
