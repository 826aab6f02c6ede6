-- admit: atomically admit (or reject) each of a batch of seckill claims on ONE voucher segment, in
-- order, and hand every admitted one to the shard's order stream. A batch is what one API process
-- received for the segment in one turn of its event loop; each claim sees the effects of the ones
-- before it, exactly as if each had been a call of its own. Reads and writes are per batch, not
-- per claim (one HMGET of the buyers' counts, one of their idempotency records, one write of each
-- key at the end): in Redis, a command costs more than the Lua around it.
-- KEYS[1] voucher hash   {stock, begin, end, limit, expire, waitcap, builtAt, listAdditions, inflight, verifiedOn}
--                        (fields: KeySpace.voucher in keys.ts); listAdditions is bumped here
-- KEYS[2] buyers hash    userId -> units held
-- KEYS[3] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[4] order stream (shard), one field d = "orderId|voucherId|userId|quantity|createdMs" per order
-- KEYS[5] waitlist zset  userId scored by enrolment time (µs)
-- KEYS[6] waitlist hash  userId -> quantity wanted
-- KEYS[7] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[8] voucher token bucket  KEYS[8 + i] the token bucket of claim i's user (lib/bucket.lua),
--         given only while the user bucket is on (ARGV[4] > 0): they are most of a call's bytes
-- ARGV[1] voucherId
-- ARGV[2] voucher rate (tokens/s; 0: off)  ARGV[3] voucher burst  ARGV[4] user rate  ARGV[5] user burst
-- ARGV[6] 1: a claim this segment has too few units for is SOLD_OUT (and enrolled on the waitlist);
--         0: it is SEGMENT_SHORT instead, and nothing is written for it (the caller borrows
--         units from another segment of the voucher first, then asks again with 1: segment-moves.ts)
-- then per claim i (1-based), from ARGV[2 + 5i]: userId, orderId (new), quantity, idempotency key or "",
--   traceparent or "" (the stream entry's t field: lib/admission.lua, sk_enqueue)
-- Returns six values per claim, {code, orderId, quantity, waitlisted, closed, version}
-- (sk_claim_reply, lib/admission.lua), code one of SK_CODE (lib/codes.lua):
--   ADMITTED · REPLAYED (same idempotency key: earlier orderId, no new unit)
--   MISSING (voucher state not in Redis: warm it, then retry) · NOT_STARTED · ENDED
--   LIMIT_EXCEEDED · SOLD_OUT (waitlisted 1 when the user is on the waitlist; closed 1 when no
--   unit is left for anyone and no place on the waitlist either; version "builtAt.listAdditions") ·
--   KEY_REUSED · RATE_LIMITED (quantity = ms until the buckets have a token again) ·
--   SEGMENT_SHORT (only with ARGV[6] = 0: this segment has too few units, borrow and ask again) ·
--   UNVERIFIED (the state was not verified against the database on this master: a failover or a
--   restart since; verify it, then retry; lib/master.lua)
-- closed and version are 0 and "" unless SOLD_OUT.
-- Checks come first and writes last: a rejected claim never changes stock. A claim that reaches
-- the checks has taken a token from each enabled bucket.
--! include lib/time.lua
--! include lib/master.lua
--! include lib/admission.lua
--! include lib/bucket.lua
local voucherKey, buyersKey, inflightKey, streamKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waitlistKey, wantedKey, recordsKey, voucherBucketKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local USER_BUCKETS = 8 -- KEYS[USER_BUCKETS + i]: claim i's user bucket
local voucherId = ARGV[1]
local vRate, vBurst, uRate, uBurst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local enrol = ARGV[6] == '1'
local FIRST_CLAIM, CLAIM_ARGS = 7, 5
local claims = (#ARGV - FIRST_CLAIM + 1) / CLAIM_ARGS

-- Claim i's arguments: userId, orderId, quantity, idempotency key, traceparent ('' when none).
local function claimArgs(i)
  local at = FIRST_CLAIM + CLAIM_ARGS * (i - 1)
  return ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
end

local out = {}
local voucher = sk_voucher_state(voucherKey)
-- Missing or unverified state decides nothing and takes no token: the caller warms or verifies it first.
local unready = nil
if not voucher then unready = SK_CODE.MISSING elseif voucher.verifiedOn ~= sk_master() then unready = SK_CODE.UNVERIFIED end
if unready then
  for _ = 1, claims do sk_claim_reply(out, unready) end
  return out
end
local stock, listAdditions = voucher.stock, voucher.listAdditions
local now, nowMicros = sk_now()

-- Every claim's buyer count and idempotency record, read once for the batch.
local users, recordFields = {}, {}
for i = 1, claims do
  local userId, _, _, idemKey = claimArgs(i)
  users[i] = userId
  if idemKey ~= '' then recordFields[#recordFields + 1] = userId .. ':' .. idemKey end
end
local held = {}
local counts = redis.call('HMGET', buyersKey, unpack(users))
for i = 1, claims do
  if held[users[i]] == nil then held[users[i]] = tonumber(counts[i] or '0') end
end
local records = {}
if #recordFields > 0 then
  local stored = redis.call('HMGET', recordsKey, unpack(recordFields))
  for j = 1, #recordFields do records[recordFields[j]] = stored[j] end
end

-- What the batch writes, once each at the end.
local admitted = 0
local buyersChanged, inflightOut, recordsOut = {}, {}, {}
local listAdditionsBefore = listAdditions

-- Token buckets: read once per batch, taken from claim by claim here, written once at the end
-- (every claim of the batch sees the same Redis time, so this equals a read and write per claim).
local vLevel, vTaken = nil, false
if vRate > 0 then vLevel = sk_bucket_level(redis.call('GET', voucherBucketKey), vRate, vBurst, now) end
local uLevel, uTaken = {}, {}
if uRate > 0 then
  local levels = redis.call('MGET', unpack(KEYS, USER_BUCKETS + 1, USER_BUCKETS + claims))
  for i = 1, claims do
    local key = KEYS[USER_BUCKETS + i]
    if uLevel[key] == nil then uLevel[key] = sk_bucket_level(levels[i], uRate, uBurst, now) end
  end
end

-- One token from the voucher's bucket and one from the buyer's, or none: 0, or the ms to wait.
local function takeTokens(userBucket)
  local wait = 0
  if vLevel then wait = sk_bucket_wait(vLevel, vRate) end
  if userBucket then wait = math.max(wait, sk_bucket_wait(uLevel[userBucket], uRate)) end
  if wait > 0 then return wait end
  if vLevel then vLevel, vTaken = vLevel - 1, true end
  if userBucket then
    uLevel[userBucket] = uLevel[userBucket] - 1
    uTaken[userBucket] = true
  end
  return 0
end

-- SOLD_OUT, telling API processes whether nobody at all can get a unit or a waitlist place now,
-- and which users may hear something else (the version of the sold-out snapshot, claims/sold-out-snapshot.ts).
local function soldOut(waitlisted, waitlistFull)
  return SK_CODE.SOLD_OUT, {
    waitlisted = waitlisted,
    closed = stock < 1 and waitlistFull,
    version = voucher.builtAt .. '.' .. listAdditions,
  }
end

-- A sold-out claim i: the user is enrolled on the waitlist once (FIFO by enrolment time), while
-- there is room.
local function enrolOnWaitlist(i, userId, quantity)
  if voucher.waitCap == 0 then return soldOut(false, true) end
  local waiting = redis.call('ZCARD', waitlistKey)
  if redis.call('ZSCORE', waitlistKey, userId) then return soldOut(true, waiting >= voucher.waitCap) end
  if waiting >= voucher.waitCap then return soldOut(false, true) end
  -- Claims of one batch share a Redis time: + (i - 1) µs keeps their enrolment FIFO.
  redis.call('ZADD', waitlistKey, tonumber(nowMicros) + i - 1, userId)
  redis.call('HSET', wantedKey, userId, quantity)
  listAdditions = listAdditions + 1
  redis.call('EXPIREAT', waitlistKey, voucher.expireAt)
  redis.call('EXPIREAT', wantedKey, voucher.expireAt)
  return soldOut(true, waiting + 1 >= voucher.waitCap)
end

-- Claim i; returns its code and answer (sk_claim_reply).
local function claim(i)
  local userId, orderId, quantity, idemKey, trace = claimArgs(i)

  local wait = takeTokens(uRate > 0 and KEYS[USER_BUCKETS + i] or nil)
  if wait > 0 then return SK_CODE.RATE_LIMITED, {quantity = wait} end

  local recordField = userId .. ':' .. idemKey
  local earlier = idemKey ~= '' and records[recordField]
  if earlier then
    local earlierId, earlierQuantity = string.match(earlier, '^([^:]*):(.*)$')
    earlierQuantity = tonumber(earlierQuantity)
    local code = earlierQuantity == quantity and SK_CODE.REPLAYED or SK_CODE.KEY_REUSED
    return code, {orderId = earlierId, quantity = earlierQuantity}
  end

  local code = sk_check(voucher, stock, held[userId], quantity, now)
  if code == SK_CODE.SOLD_OUT then
    if not enrol then return SK_CODE.SEGMENT_SHORT end
    return enrolOnWaitlist(i, userId, quantity)
  end
  if code ~= SK_CODE.ADMITTED then return code end

  stock = stock - quantity
  admitted = admitted + 1
  held[userId] = held[userId] + quantity
  buyersChanged[userId] = true
  local order = sk_order(voucherId, userId, quantity, now)
  inflightOut[#inflightOut + 1] = orderId
  inflightOut[#inflightOut + 1] = sk_enqueue(streamKey, orderId, order, '', idemKey, trace)
  if idemKey ~= '' then
    records[recordField] = orderId .. ':' .. quantity
    recordsOut[#recordsOut + 1] = recordField
    recordsOut[#recordsOut + 1] = records[recordField]
    listAdditions = listAdditions + 1
  end
  return SK_CODE.ADMITTED, {orderId = orderId, quantity = quantity}
end

for i = 1, claims do sk_claim_reply(out, claim(i)) end

if admitted > 0 then
  local buyerCounts = {}
  for user in pairs(buyersChanged) do
    buyerCounts[#buyerCounts + 1] = user
    buyerCounts[#buyerCounts + 1] = held[user]
  end
  redis.call('HSET', buyersKey, unpack(buyerCounts))
  redis.call('EXPIREAT', buyersKey, voucher.expireAt)
  redis.call('HSET', inflightKey, unpack(inflightOut))
end
if #recordsOut > 0 then
  redis.call('HSET', recordsKey, unpack(recordsOut))
  redis.call('EXPIREAT', recordsKey, voucher.expireAt)
end
if admitted > 0 or listAdditions ~= listAdditionsBefore then
  redis.call('HSET', voucherKey, 'stock', stock, 'inflight', voucher.inflight + admitted, 'listAdditions', listAdditions)
end
if vTaken then sk_bucket_store(voucherBucketKey, vLevel, vRate, vBurst, now) end
for key in pairs(uTaken) do sk_bucket_store(key, uLevel[key], uRate, uBurst, now) end
return out
