-- admit: atomically admit (or reject) each of a batch of seckill claims, in order, and hand every
-- admitted one to its shard's order stream. A batch is what one API process received in one turn
-- of its event loop for the voucher segments of one call scope (one hash slot on a Cluster, every
-- shard on a single server: admission-batch.ts), in groups of claims on one voucher segment; each
-- claim sees the effects of the ones before it, exactly as if each had been a call of its own.
-- What a call pays once (the script call, the master check, TIME, the token buckets' read, the
-- in-flight write of each shard) is paid once per batch, whatever its vouchers; reads and writes
-- of a voucher's keys once per group (one HMGET of the buyers' counts, one of their idempotency
-- records, one write of each key at the end): in Redis, a command costs more than the Lua around it.
-- Per group g, in the order of the groups, KEYS from k = 1 + (the keys of the groups before):
-- KEYS[k]     voucher hash   {stock, begin, end, limit, expire, waitcap, builtAt, listAdditions, inflight, verifiedOn}
--                            (fields: KeySpace.voucher in keys.ts); listAdditions is bumped here
-- KEYS[k + 1] buyers hash    userId -> units held
-- KEYS[k + 2] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[k + 3] order stream (shard), one field d = "orderId|voucherId|userId|quantity|createdMs" per order
-- KEYS[k + 4] waitlist zset  userId scored by enrolment time (µs)
-- KEYS[k + 5] waitlist hash  userId -> quantity wanted
-- KEYS[k + 6] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[k + 7] voucher token bucket  KEYS[k + 7 + i] the token bucket of the group's claim i's user
--             (lib/bucket.lua), given only while the user bucket is on (user rate > 0): they are
--             most of a call's bytes
-- ARGV, per group from a = 1 + (the arguments of the groups before):
-- ARGV[a] voucherId  ARGV[a + 1] claims in the group (n)
-- ARGV[a + 2] voucher rate (tokens/s; 0: off)  ARGV[a + 3] voucher burst  ARGV[a + 4] user rate  ARGV[a + 5] user burst
-- ARGV[a + 6] 1: a claim this segment has too few units for is SOLD_OUT (and enrolled on the waitlist);
--             0: it is SEGMENT_SHORT instead, and nothing is written for it (the caller borrows
--             units from another segment of the voucher first, then asks again with 1: segment-moves.ts)
-- then per claim i (1-based), from ARGV[a + 2 + 5i]: userId, orderId (new), quantity, idempotency
--   key or "", traceparent or "" (the stream entry's t field: lib/admission.lua, sk_enqueue)
-- Returns six values per claim, groups in order, {code, orderId, quantity, waitlisted, closed, version}
-- (sk_claim_reply, lib/admission.lua), code one of SK_CODE (lib/codes.lua):
--   ADMITTED · REPLAYED (same idempotency key: earlier orderId, no new unit)
--   MISSING (voucher state not in Redis: warm it, then retry) · NOT_STARTED · ENDED
--   LIMIT_EXCEEDED · SOLD_OUT (waitlisted 1 when the user is on the waitlist; closed 1 when no
--   unit is left for anyone and no place on the waitlist either; version "builtAt.listAdditions") ·
--   KEY_REUSED · RATE_LIMITED (quantity = ms until the buckets have a token again) ·
--   SEGMENT_SHORT (only with enrol 0: this segment has too few units, borrow and ask again) ·
--   UNVERIFIED (the state was not verified against the database on this master: a failover or a
--   restart since; verify it, then retry; lib/master.lua)
-- closed and version are 0 and "" unless SOLD_OUT.
-- Checks come first and writes last: a rejected claim never changes stock. A claim that reaches
-- the checks has taken a token from each enabled bucket.
--! include lib/time.lua
--! include lib/master.lua
--! include lib/admission.lua
--! include lib/bucket.lua
local GROUP_KEYS, GROUP_ARGS, CLAIM_ARGS = 8, 7, 5
local out = {}
local master, now, nowMicros = nil, nil, nil
local enrolled = 0 -- waitlist enrolments of this call
-- Per in-flight hash (one per shard): its records of this call, written once at the end.
local inflightOut, inflightKeys = {}, {}

-- The token buckets of the whole call: read with one MGET before the first group, taken from claim
-- by claim (a bucket two groups share, as a buyer's claims on two segments, carries over), each
-- written once at the end. Every claim of the call sees the same Redis time, so this equals a
-- read and a write per claim.
local bucketKeys, buckets = {}, {}
do
  local k, a = 1, 1
  local function wants(key)
    if not buckets[key] then
      buckets[key] = {}
      bucketKeys[#bucketKeys + 1] = key
    end
  end
  while a <= #ARGV do
    local claims, vRate, uRate = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 4])
    if vRate > 0 then wants(KEYS[k + GROUP_KEYS - 1]) end
    if uRate > 0 then for i = 1, claims do wants(KEYS[k + GROUP_KEYS - 1 + i]) end end
    k, a = k + GROUP_KEYS + (uRate > 0 and claims or 0), a + GROUP_ARGS + CLAIM_ARGS * claims
  end
  if #bucketKeys > 0 then
    now, nowMicros = sk_now()
    local stored = redis.call('MGET', unpack(bucketKeys))
    for j, key in ipairs(bucketKeys) do buckets[key].stored = stored[j] end
  end
end

-- The bucket at `key` with its level now, computed at its first use in the call.
local function bucketOf(key, rate, burst)
  local b = buckets[key]
  if not b.level then b.level, b.rate, b.burst = sk_bucket_level(b.stored, rate, burst, now), rate, burst end
  return b
end

-- The group whose keys start at KEYS[k] and arguments at ARGV[a]; returns the next group's k and a.
local function admitGroup(k, a)
  local voucherKey, buyersKey, inflightKey, streamKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local waitlistKey, wantedKey, recordsKey, voucherBucketKey = KEYS[k + 4], KEYS[k + 5], KEYS[k + 6], KEYS[k + 7]
  local voucherId, claims = ARGV[a], tonumber(ARGV[a + 1])
  local vRate, vBurst, uRate, uBurst = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local enrol = ARGV[a + 6] == '1'
  local firstClaim, userBuckets = a + GROUP_ARGS, k + GROUP_KEYS - 1 -- KEYS[userBuckets + i]: claim i's user bucket
  local nextK, nextA = k + GROUP_KEYS + (uRate > 0 and claims or 0), firstClaim + CLAIM_ARGS * claims

  -- Claim i's arguments: userId, orderId, quantity, idempotency key, traceparent ('' when none).
  local function claimArgs(i)
    local at = firstClaim + CLAIM_ARGS * (i - 1)
    return ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3], ARGV[at + 4]
  end

  local voucher = sk_voucher_state(voucherKey)
  -- Missing or unverified state decides nothing and takes no token: the caller warms or verifies it first.
  local unready = nil
  if not voucher then
    unready = SK_CODE.MISSING
  else
    master = master or sk_master()
    if voucher.verifiedOn ~= master then unready = SK_CODE.UNVERIFIED end
  end
  if unready then
    for _ = 1, claims do sk_claim_reply(out, unready) end
    return nextK, nextA
  end
  local stock, listAdditions = voucher.stock, voucher.listAdditions
  if not now then now, nowMicros = sk_now() end
  -- Every claim's buyer count and idempotency record, read once for the group.
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

  -- What the group writes, once each at the end (its in-flight records with the call's).
  local admitted = 0
  local buyersChanged, recordsOut = {}, {}
  local inflight = inflightOut[inflightKey]
  if not inflight then
    inflight = {}
    inflightOut[inflightKey] = inflight
    inflightKeys[#inflightKeys + 1] = inflightKey
  end
  local listAdditionsBefore = listAdditions

  -- One token from the voucher's bucket and one from the buyer's, or none: 0, or the ms to wait.
  local function takeTokens(userBucket)
    local v = vRate > 0 and bucketOf(voucherBucketKey, vRate, vBurst) or nil
    local u = userBucket and bucketOf(userBucket, uRate, uBurst) or nil
    local wait = 0
    if v then wait = sk_bucket_wait(v.level, v.rate) end
    if u then wait = math.max(wait, sk_bucket_wait(u.level, u.rate)) end
    if wait > 0 then return wait end
    if v then v.level, v.taken = v.level - 1, true end
    if u then u.level, u.taken = u.level - 1, true end
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

  -- A sold-out claim: the user is enrolled on the waitlist once (FIFO by enrolment time), while
  -- there is room.
  local function enrolOnWaitlist(userId, quantity)
    if voucher.waitCap == 0 then return soldOut(false, true) end
    local waiting = redis.call('ZCARD', waitlistKey)
    if redis.call('ZSCORE', waitlistKey, userId) then return soldOut(true, waiting >= voucher.waitCap) end
    if waiting >= voucher.waitCap then return soldOut(false, true) end
    -- Claims of one call share a Redis time: + 1 µs per enrolment keeps them FIFO.
    redis.call('ZADD', waitlistKey, tonumber(nowMicros) + enrolled, userId)
    enrolled = enrolled + 1
    redis.call('HSET', wantedKey, userId, quantity)
    listAdditions = listAdditions + 1
    redis.call('EXPIREAT', waitlistKey, voucher.expireAt)
    redis.call('EXPIREAT', wantedKey, voucher.expireAt)
    return soldOut(true, waiting + 1 >= voucher.waitCap)
  end

  -- Claim i; returns its code and answer (sk_claim_reply).
  local function claim(i)
    local userId, orderId, quantity, idemKey, trace = claimArgs(i)

    local wait = takeTokens(uRate > 0 and KEYS[userBuckets + i] or nil)
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
      return enrolOnWaitlist(userId, quantity)
    end
    if code ~= SK_CODE.ADMITTED then return code end

    stock = stock - quantity
    admitted = admitted + 1
    held[userId] = held[userId] + quantity
    buyersChanged[userId] = true
    local order = sk_order(voucherId, userId, quantity, now)
    inflight[#inflight + 1] = orderId
    inflight[#inflight + 1] = sk_enqueue(streamKey, orderId, order, '', idemKey, trace)
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
  end
  if #recordsOut > 0 then
    redis.call('HSET', recordsKey, unpack(recordsOut))
    redis.call('EXPIREAT', recordsKey, voucher.expireAt)
  end
  if admitted > 0 or listAdditions ~= listAdditionsBefore then
    redis.call('HSET', voucherKey, 'stock', stock, 'inflight', voucher.inflight + admitted, 'listAdditions', listAdditions)
  end
  return nextK, nextA
end

local k, a = 1, 1
while a <= #ARGV do k, a = admitGroup(k, a) end
for _, key in ipairs(inflightKeys) do
  if #inflightOut[key] > 0 then redis.call('HSET', key, unpack(inflightOut[key])) end
end
for _, key in ipairs(bucketKeys) do
  local b = buckets[key]
  if b.taken then sk_bucket_store(key, b.level, b.rate, b.burst, now) end
end
return out
