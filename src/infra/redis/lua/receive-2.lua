-- receive: second step of a move (lend-2.lua): adds the lent units to this segment's stock, once
-- per move however often and however late it is called (a retry, recovery after the mover died):
-- the record of the move stays here until the voucher's keys expire.
-- KEYS[1] voucher hash (the receiver)  KEYS[2] moves in
-- ARGV[1] moveId  ARGV[2] units
-- Bumps the receiver's moves (KeySpace.voucher in keys.ts) when it adds them.
-- Returns ADDED (1) when added now, ADDED_BEFORE (0) when added before, MISSING (-1) when the
-- segment's state is missing (the move stays lent: recovery gives it once the state is rebuilt).
local ADDED, ADDED_BEFORE, MISSING = 1, 0, -1
local voucherKey, movesInKey = KEYS[1], KEYS[2]
local moveId, units = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', voucherKey) == 0 then return MISSING end
if redis.call('HSETNX', movesInKey, moveId, units) == 0 then return ADDED_BEFORE end
redis.call('EXPIREAT', movesInKey, redis.call('HGET', voucherKey, 'expire'))
redis.call('HINCRBY', voucherKey, 'stock', units)
redis.call('HINCRBY', voucherKey, 'moves', 1)
return ADDED
