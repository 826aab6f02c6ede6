-- restock: give the units of a released (expired or cancelled) order back to Redis, exactly once,
-- then admit waiting users for them, head of the waitlist first, through the same checks and the
-- same stream as a claim.
-- KEYS[1] voucher hash  KEYS[2] buyers hash  KEYS[3] released hash (orderId -> 1: given back)
-- KEYS[4] waitlist zset  KEYS[5] waitlist quantities  KEYS[6] in-flight hash (shard)
-- KEYS[7] order stream (shard): a promotion's entry ends in the mark "|p" (lib/admission.lua)
-- KEYS[8] a queue voucher's admitted places (userId -> orderId), written with each promotion
--   when ARGV[5] is 1 (the waitlist is the queue's waiting places, scored by place)
-- ARGV[1] voucherId  ARGV[2] released orderId  ARGV[3] its userId  ARGV[4] its quantity
--   (ARGV[2] "": nothing released, only promotions for units this segment has: a segment of the
--   voucher lent it units for its waiting users, segment-moves.ts, or a queue's next places)
-- ARGV[5] 1: a queue voucher, 0: not
-- ARGV[6..] fresh order ids for promotions (one per promotion at most)
-- Returns {0, orderId1, userId1, quantity1, ...} for the promotions made,
--   {1} when this order was given back before, {2} when the voucher's state is missing (warm it:
--   the database already has the units back, and warming marks the order as given back).
--! include lib/time.lua
--! include lib/admission.lua
local voucherId, releasedId, userId = ARGV[1], ARGV[2], ARGV[3]
local quantity = tonumber(ARGV[4])
local queue = ARGV[5] == '1'
local FIRST_ID = 6

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'expire', 'waitcap')
local stock = tonumber(v[1])
if stock == nil then return {2} end
if releasedId ~= '' then
  if redis.call('HEXISTS', KEYS[3], releasedId) == 1 then return {1} end
  stock = stock + quantity
  redis.call('HINCRBY', KEYS[1], 'stock', quantity)
  if redis.call('HINCRBY', KEYS[2], userId, -quantity) <= 0 then redis.call('HDEL', KEYS[2], userId) end
  redis.call('HSET', KEYS[3], releasedId, 1)
  redis.call('EXPIREAT', KEYS[3], v[5])
end

local out = {0}
if tonumber(v[6] or '0') == 0 or #ARGV < FIRST_ID then return out end
local now = sk_now()
if sk_check(stock, v, 0, 0, now) ~= 0 then return out end -- outside the sale window: no promotions

local nextId = FIRST_ID
while nextId <= #ARGV do
  local head = redis.call('ZRANGE', KEYS[4], 0, 0)
  if #head == 0 then break end
  local user = head[1]
  local want = tonumber(redis.call('HGET', KEYS[5], user) or '1')
  local held = tonumber(redis.call('HGET', KEYS[2], user) or '0')
  local code = sk_check(stock, v, held, want, now)
  if code == 6 then break end -- too few units for the head: it keeps its place
  redis.call('ZREM', KEYS[4], user)
  redis.call('HDEL', KEYS[5], user)
  if code == 0 then -- otherwise no longer eligible (already holds the limit): skipped
    sk_admit(KEYS[1], KEYS[2], KEYS[6], KEYS[7], voucherId, user, ARGV[nextId], want, now, v[5])
    if queue then
      redis.call('HSET', KEYS[8], user, ARGV[nextId])
      redis.call('EXPIREAT', KEYS[8], v[5])
    end
    out[#out + 1] = ARGV[nextId]
    out[#out + 1] = user
    out[#out + 1] = want
    stock = stock - want
    nextId = nextId + 1
  end
end
return out
