-- lend: first step of moving units between two segments of one voucher (segment-moves.ts). Takes
-- half this segment's stock, at least ARGV[3] units (all it has when fewer), and records them as
-- lent until the receiver has them: a unit is never in two segments' stock at once, and never in
-- none without this record.
-- KEYS[1] voucher hash (the lender)  KEYS[2] moves out
-- ARGV[1] moveId  ARGV[2] receiving shard  ARGV[3] units the receiver needs
-- Bumps the lender's moves (KeySpace.voucher in keys.ts) when it lends.
-- Returns the units lent (0: none here), or MISSING (-1) when the segment's state is missing.
--! include lib/time.lua
local MISSING = -1
local voucherKey, movesOutKey = KEYS[1], KEYS[2]
local moveId, toShard, need = ARGV[1], ARGV[2], tonumber(ARGV[3])
local stock = redis.call('HGET', voucherKey, 'stock')
if not stock then return MISSING end
stock = tonumber(stock)
local units = math.min(stock, math.max(need, math.ceil(stock / 2)))
if units < 1 then return 0 end
redis.call('HINCRBY', voucherKey, 'stock', -units)
redis.call('HINCRBY', voucherKey, 'moves', 1)
redis.call('HSET', movesOutKey, moveId, toShard .. '|' .. units .. '|' .. sk_now())
redis.call('EXPIREAT', movesOutKey, redis.call('HGET', voucherKey, 'expire'))
return units
