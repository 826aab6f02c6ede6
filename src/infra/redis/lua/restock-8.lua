-- restock: give the units of a released (expired or cancelled) order back to Redis, exactly once,
-- then admit waiting users for them, head of the waitlist first, through the same checks and the
-- same stream as a claim.
-- KEYS[1] voucher hash  KEYS[2] buyers hash  KEYS[3] in-flight hash (shard)
-- KEYS[4] order stream (shard): a promotion's entry ends in the mark "|p" (lib/admission.lua)
-- KEYS[5] waitlist zset  KEYS[6] waitlist quantities  KEYS[7] released hash (orderId -> 1: given back)
-- KEYS[8] a queue voucher's admitted places (userId -> orderId), written with each promotion
--   when ARGV[5] is 1 (the waitlist is the queue's waiting places, scored by place)
-- ARGV[1] voucherId  ARGV[2] released orderId  ARGV[3] its userId  ARGV[4] its quantity
--   (ARGV[2] "": nothing released, only promotions for units this segment has: a segment of the
--   voucher lent it units for its waiting users, segment-moves.ts, or a queue's next places)
-- ARGV[5] 1: a queue voucher, 0: not
-- ARGV[6] the traceparent promotions carry in their stream entries (the relay's span in the released
--   order's trace), "" for none
-- ARGV[7..] fresh order ids for promotions (one per promotion at most)
-- Returns {RESTOCKED, orderId1, userId1, quantity1, ...} for the promotions made,
--   {GIVEN_BACK_BEFORE} when this order was given back before, {MISSING} when the voucher's state
--   is missing (warm it: the database already has the units back, and warming marks the order as
--   given back), {UNVERIFIED} when the units were given back but nobody promoted: the state is not
--   verified on this master yet (lib/master.lua), and its verification promotes them. RestockCode
--   in scripts/voucher-state.ts has the same numbers.
--! include lib/time.lua
--! include lib/admission.lua
--! include lib/master.lua
local RESTOCKED, GIVEN_BACK_BEFORE, MISSING, UNVERIFIED = 0, 1, 2, 3
local segment = {voucher = KEYS[1], buyers = KEYS[2], inflight = KEYS[3], stream = KEYS[4]}
local waitlistKey, wantedKey, releasedKey, queueAdmittedKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local voucherId, releasedId, releasedUser, releasedQuantity = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local queue = ARGV[5] == '1'
local trace = ARGV[6]
local FIRST_PROMOTION_ID = 7

local voucher = sk_voucher_state(segment.voucher)
if not voucher then return {MISSING} end
local stock = voucher.stock
if releasedId ~= '' then
  if redis.call('HEXISTS', releasedKey, releasedId) == 1 then return {GIVEN_BACK_BEFORE} end
  stock = stock + releasedQuantity
  redis.call('HINCRBY', segment.voucher, 'stock', releasedQuantity)
  if redis.call('HINCRBY', segment.buyers, releasedUser, -releasedQuantity) <= 0 then redis.call('HDEL', segment.buyers, releasedUser) end
  redis.call('HSET', releasedKey, releasedId, 1)
  redis.call('EXPIREAT', releasedKey, voucher.expireAt)
end

local out = {RESTOCKED}
if voucher.waitCap == 0 or #ARGV < FIRST_PROMOTION_ID then return out end
-- A promotion is an admission: like a claim, it waits for the state to be verified on this master.
if voucher.verifiedOn ~= sk_master() then return {UNVERIFIED} end
local now = sk_now()
if sk_check(voucher, stock, 0, 0, now) ~= SK_CODE.ADMITTED then return out end -- outside the sale window: no promotions

local nextId = FIRST_PROMOTION_ID
while nextId <= #ARGV do
  local head = redis.call('ZRANGE', waitlistKey, 0, 0)
  if #head == 0 then break end
  local user = head[1]
  local want = tonumber(redis.call('HGET', wantedKey, user) or '1')
  local held = tonumber(redis.call('HGET', segment.buyers, user) or '0')
  local code = sk_check(voucher, stock, held, want, now)
  if code == SK_CODE.SOLD_OUT then break end -- too few units for the head: it keeps its place
  redis.call('ZREM', waitlistKey, user)
  redis.call('HDEL', wantedKey, user)
  if code == SK_CODE.ADMITTED then -- otherwise no longer eligible (already holds the limit): skipped
    local orderId = ARGV[nextId]
    sk_admit(segment, voucherId, user, orderId, want, now, voucher.expireAt, trace)
    if queue then
      redis.call('HSET', queueAdmittedKey, user, orderId)
      redis.call('EXPIREAT', queueAdmittedKey, voucher.expireAt)
    end
    out[#out + 1] = orderId
    out[#out + 1] = user
    out[#out + 1] = want
    stock = stock - want
    nextId = nextId + 1
  end
end
return out
