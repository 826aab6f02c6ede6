-- receive: second step of a move (lend-2.lua): adds the lent units to this segment's stock, once
-- per move however often and however late it is called (a retry, recovery after the mover died):
-- the record of the move stays here until the voucher's keys expire.
-- KEYS[1] voucher hash (the receiver)  KEYS[2] moves in
-- ARGV[1] moveId  ARGV[2] units
-- Bumps the receiver's moves (KeySpace.voucher in keys.ts) when it adds them.
-- Returns 1 when added now, 0 when added before, -1 when the segment's state is missing (the
-- move stays lent: recovery gives it once the state is rebuilt).
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('EXPIREAT', KEYS[2], redis.call('HGET', KEYS[1], 'expire'))
redis.call('HINCRBY', KEYS[1], 'stock', tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'moves', 1)
return 1
