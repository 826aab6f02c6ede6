-- admit: atomically admit (or reject) each of a batch of seckill claims on ONE voucher segment, in
-- order, and hand every admitted one to the shard's order stream. A batch is what one API process
-- received for the segment in one turn of its event loop; each claim sees the effects of the ones
-- before it, exactly as if each had been a call of its own. Reads and writes are per batch, not
-- per claim (one HMGET of the buyers' counts, one of their idempotency records, one write of each
-- key at the end): in Redis, a command costs more than the Lua around it.
-- KEYS[1] voucher hash   {stock, begin, end, limit, expire, waitcap, builtAt, listAdditions, inflight, verifiedOn}
--                        (fields: KeySpace.voucher in keys.ts); listAdditions is bumped here
-- KEYS[2] buyers hash    userId -> units held
-- KEYS[3] idempotency    "userId:key" -> "orderId:quantity"
-- KEYS[4] in-flight hash (shard) orderId -> "voucherId|userId|quantity|createdMs|streamId"
-- KEYS[5] order stream (shard), one field d = "orderId|voucherId|userId|quantity|createdMs" per order
-- KEYS[6] waitlist zset  userId scored by enrolment time (µs)
-- KEYS[7] waitlist hash  userId -> quantity wanted
-- KEYS[8] voucher token bucket  KEYS[8 + i] the token bucket of claim i's user (lib/bucket.lua),
--         given only while the user bucket is on (ARGV[4] > 0): they are most of a call's bytes
-- ARGV[1] voucherId
-- ARGV[2] voucher rate (tokens/s; 0: off)  ARGV[3] voucher burst  ARGV[4] user rate  ARGV[5] user burst
-- ARGV[6] 1: a claim this segment has too few units for is SOLD_OUT (and enrolled on the waitlist);
--         0: it is SEGMENT_SHORT instead, and nothing is written for it (the caller borrows
--         units from another segment of the voucher first, then asks again with 1: segment-moves.ts)
-- then per claim i (1-based), from ARGV[3 + 4i]: userId, orderId (new), quantity, idempotency key or ""
-- Returns six values per claim, {code, orderId, quantity, waitlisted, closed, version}:
--   0 ADMITTED · 1 REPLAYED (same idempotency key: earlier orderId, no new unit)
--   2 MISSING (voucher state not in Redis: warm it, then retry) · 3 NOT_STARTED · 4 ENDED
--   5 LIMIT_EXCEEDED · 6 SOLD_OUT (waitlisted 1 when the user is on the waitlist; closed 1 when no
--   unit is left for anyone and no place on the waitlist either; version "builtAt.listAdditions") ·
--   7 KEY_REUSED · 8 RATE_LIMITED (quantity = ms until the buckets have a token again) ·
--   9 SEGMENT_SHORT (only with ARGV[6] = 0: this segment has too few units, borrow and ask again) ·
--   10 UNVERIFIED (the state was not verified against the database on this master: a failover or a
--   restart since; verify it, then retry; lib/master.lua)
-- closed and version are 0 and "" unless SOLD_OUT.
-- Checks come first and writes last: a rejected claim never changes stock. A claim that reaches
-- the checks has taken a token from each enabled bucket.
--! include lib/time.lua
--! include lib/master.lua
--! include lib/admission.lua
--! include lib/bucket.lua
local voucherId = ARGV[1]
local vRate, vBurst, uRate, uBurst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local enrol = ARGV[6] == '1'
local claims = (#ARGV - 6) / 4
local out = {}

local v = redis.call('HMGET', KEYS[1], 'stock', 'begin', 'end', 'limit', 'expire', 'waitcap', 'builtAt', 'listAdditions', 'inflight', 'verifiedOn')
-- Missing or unverified state decides nothing and takes no token: the caller warms or verifies it first.
local unready = nil
if v[1] == false then unready = 2 elseif v[10] ~= sk_master() then unready = 10 end
if unready then
  for i = 1, claims do
    out[#out + 1] = unready; out[#out + 1] = ''; out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = ''
  end
  return out
end
local stock = tonumber(v[1])
local cap = tonumber(v[6] or '0')
local listAdditions = tonumber(v[8] or '0')
local now, nowMicros = sk_now()

-- Every claim's buyer count and idempotency record, read once for the batch.
local users, idemFields = {}, {}
for i = 1, claims do
  local base = 3 + 4 * i
  users[i] = ARGV[base]
  if ARGV[base + 3] ~= '' then idemFields[#idemFields + 1] = ARGV[base] .. ':' .. ARGV[base + 3] end
end
local held = {}
local stored = redis.call('HMGET', KEYS[2], unpack(users))
for i = 1, claims do
  if held[users[i]] == nil then held[users[i]] = tonumber(stored[i] or '0') end
end
local records = {}
if #idemFields > 0 then
  stored = redis.call('HMGET', KEYS[3], unpack(idemFields))
  for j = 1, #idemFields do records[idemFields[j]] = stored[j] end
end

-- What the batch writes, once each at the end.
local admitted = 0
local buyersChanged, inflightOut, recordsOut = {}, {}, {}
local listAdditionsBefore = listAdditions

-- Token buckets: read once per batch, taken from claim by claim here, written once at the end
-- (every claim of the batch sees the same Redis time, so this equals a read and write per claim).
local vLevel, vTaken = nil, false
if vRate > 0 then vLevel = sk_bucket_level(redis.call('GET', KEYS[8]), vRate, vBurst, now) end
local uLevel, uTaken = {}, {}
if uRate > 0 then
  local levels = redis.call('MGET', unpack(KEYS, 9, 8 + claims))
  for i = 1, claims do
    if uLevel[KEYS[8 + i]] == nil then uLevel[KEYS[8 + i]] = sk_bucket_level(levels[i], uRate, uBurst, now) end
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
-- and which users may hear something else (the version of the sold-out snapshot, scripts/admission.ts).
local function soldOut(waitlisted, waitlistFull)
  local closed = 0
  if stock < 1 and waitlistFull then closed = 1 end
  return 6, '', 0, waitlisted, closed, (v[7] or '') .. '.' .. listAdditions
end

-- Claim i; returns its six values.
local function claim(i)
  local base = 3 + 4 * i
  local userId, orderId, quantity, idemKey = ARGV[base], ARGV[base + 1], tonumber(ARGV[base + 2]), ARGV[base + 3]

  local wait = takeTokens(uRate > 0 and KEYS[8 + i] or nil)
  if wait > 0 then return 8, '', wait, 0, 0, '' end

  local idemField = userId .. ':' .. idemKey
  if idemKey ~= '' then
    local earlier = records[idemField]
    if earlier then
      local sep = string.find(earlier, ':', 1, true)
      local earlierQuantity = tonumber(string.sub(earlier, sep + 1))
      if earlierQuantity ~= quantity then return 7, string.sub(earlier, 1, sep - 1), earlierQuantity, 0, 0, '' end
      return 1, string.sub(earlier, 1, sep - 1), earlierQuantity, 0, 0, ''
    end
  end

  local code = sk_check(stock, v, held[userId], quantity, now)
  if code == 6 and not enrol then return 9, '', 0, 0, 0, '' end
  if code == 6 then
    -- Sold out: enrol the user on the waitlist once (FIFO by enrolment time), while there is room.
    if cap == 0 then return soldOut(0, true) end
    local waiting = redis.call('ZCARD', KEYS[6])
    if redis.call('ZSCORE', KEYS[6], userId) then return soldOut(1, waiting >= cap) end
    if waiting >= cap then return soldOut(0, true) end
    -- Claims of one batch share a Redis time: + (i - 1) µs keeps their enrolment FIFO.
    redis.call('ZADD', KEYS[6], tonumber(nowMicros) + i - 1, userId)
    redis.call('HSET', KEYS[7], userId, quantity)
    listAdditions = listAdditions + 1
    redis.call('EXPIREAT', KEYS[6], v[5])
    redis.call('EXPIREAT', KEYS[7], v[5])
    return soldOut(1, waiting + 1 >= cap)
  end
  if code ~= 0 then return code, '', 0, 0, 0, '' end

  stock = stock - quantity
  admitted = admitted + 1
  held[userId] = held[userId] + quantity
  buyersChanged[userId] = true
  local order = sk_order(voucherId, userId, quantity, now)
  inflightOut[#inflightOut + 1] = orderId
  inflightOut[#inflightOut + 1] = sk_enqueue(KEYS[5], orderId, order, '')
  if idemKey ~= '' then
    records[idemField] = orderId .. ':' .. quantity
    recordsOut[#recordsOut + 1] = idemField
    recordsOut[#recordsOut + 1] = records[idemField]
    listAdditions = listAdditions + 1
  end
  return 0, orderId, quantity, 0, 0, ''
end

for i = 1, claims do
  local code, orderId, quantity, waitlisted, closed, version = claim(i)
  out[#out + 1] = code; out[#out + 1] = orderId; out[#out + 1] = quantity
  out[#out + 1] = waitlisted; out[#out + 1] = closed; out[#out + 1] = version
end

if admitted > 0 then
  local counts = {}
  for user in pairs(buyersChanged) do
    counts[#counts + 1] = user
    counts[#counts + 1] = held[user]
  end
  redis.call('HSET', KEYS[2], unpack(counts))
  redis.call('EXPIREAT', KEYS[2], v[5])
  redis.call('HSET', KEYS[4], unpack(inflightOut))
end
if #recordsOut > 0 then
  redis.call('HSET', KEYS[3], unpack(recordsOut))
  redis.call('EXPIREAT', KEYS[3], v[5])
end
if admitted > 0 or listAdditions ~= listAdditionsBefore then
  redis.call('HSET', KEYS[1], 'stock', stock, 'inflight', tonumber(v[9] or '0') + admitted, 'listAdditions', listAdditions)
end
if vTaken then sk_bucket_store(KEYS[8], vLevel, vRate, vBurst, now) end
for key in pairs(uTaken) do sk_bucket_store(key, uLevel[key], uRate, uBurst, now) end
return out
