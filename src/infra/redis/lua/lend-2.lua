-- lend: first step of moving units between two segments of one voucher (segment-moves.ts). Takes
-- half this segment's stock, at least ARGV[3] units (all it has when fewer), and records them as
-- lent until the receiver has them: a unit is never in two segments' stock at once, and never in
-- none without this record.
-- KEYS[1] voucher hash (the lender)  KEYS[2] moves out
-- ARGV[1] moveId  ARGV[2] receiving shard  ARGV[3] units the receiver needs
-- Bumps the lender's moves (KeySpace.voucher in keys.ts) when it lends.
-- Returns the units lent (0: none here), or -1 when the segment's state is missing.
local stock = redis.call('HGET', KEYS[1], 'stock')
if not stock then return -1 end
stock = tonumber(stock)
local units = math.min(stock, math.max(tonumber(ARGV[3]), math.ceil(stock / 2)))
if units < 1 then return 0 end
local t = redis.call('TIME')
redis.call('HINCRBY', KEYS[1], 'stock', -units)
redis.call('HINCRBY', KEYS[1], 'moves', 1)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. '|' .. units .. '|' .. (t[1] * 1000 + math.floor(t[2] / 1000)))
redis.call('EXPIREAT', KEYS[2], redis.call('HGET', KEYS[1], 'expire'))
return units
