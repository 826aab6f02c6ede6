-- Token buckets, shared by admit and bucket (inlined where a script says `--! include lib/bucket.lua`).
-- A bucket refills at `rate` tokens per second up to `burst`. It is kept as one string
-- "tokens:at", its level and the Redis time (ms) it was written at, so one MGET reads every bucket
-- of a claim and one SET PX writes each. (A single timestamp, as GCRA keeps, loses the refill of one
-- token in the rounding of a millisecond clock near 1.8e12 once rates reach millions per second.)
-- An absent key is a full bucket, and a key expires when its bucket is full again, so buyers who
-- stop asking leave nothing behind.

-- The level of a bucket stored as `stored` ("tokens:at", or false: full) at Redis time `now` (ms).
local function sk_bucket_level(stored, rate, burst, now)
  if not stored then return burst end
  local sep = string.find(stored, ':', 1, true)
  local elapsed = now - tonumber(string.sub(stored, sep + 1))
  return math.min(burst, tonumber(string.sub(stored, 1, sep - 1)) + elapsed * rate / 1000)
end

-- 0 when a bucket at `level` holds a whole token, else the ms until it does.
local function sk_bucket_wait(level, rate)
  if level >= 1 then return 0 end
  return math.ceil((1 - level) * 1000 / rate)
end

-- Writes a bucket at `level`; the key expires when the bucket would be full again.
local function sk_bucket_store(key, level, rate, burst, now)
  redis.call('SET', key, level .. ':' .. now, 'PX', math.max(1, math.ceil((burst - level) * 1000 / rate)))
end

-- Takes one token from every bucket of `buckets` ({key, rate, burst}; rate 0: off), or none when
-- one of them has no whole token, so a request refused by one bucket costs the others nothing.
-- Returns 0 when taken, else the ms until every bucket has a token again.
local function sk_take_tokens(buckets, now)
  local on, keys = {}, {}
  for _, b in ipairs(buckets) do
    if b.rate > 0 then
      on[#on + 1] = b
      keys[#keys + 1] = b.key
    end
  end
  if #on == 0 then return 0 end
  local stored = redis.call('MGET', unpack(keys))
  local wait = 0
  for i, b in ipairs(on) do
    b.level = sk_bucket_level(stored[i], b.rate, b.burst, now)
    wait = math.max(wait, sk_bucket_wait(b.level, b.rate))
  end
  if wait > 0 then return wait end
  for _, b in ipairs(on) do sk_bucket_store(b.key, b.level - 1, b.rate, b.burst, now) end
  return 0
end
