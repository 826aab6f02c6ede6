-- Token buckets, shared by admit and bucket (inlined where a script says `--! include lib/bucket.lua`).
-- A bucket refills at `rate` tokens per second up to `burst`. It is kept as one string
-- "tokens:at", its level and the Redis time (ms) it was written at, so one MGET reads every bucket
-- of a claim and one SET PX writes each. (A single timestamp, as GCRA keeps, loses the refill of one
-- token in the rounding of a millisecond clock near 1.8e12 once rates reach millions per second.)
-- An absent key is a full bucket, and a key expires when its bucket is full again, so buyers who
-- stop asking leave nothing behind.

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
    b.level = b.burst
    if stored[i] then
      local sep = string.find(stored[i], ':', 1, true)
      local elapsed = now - tonumber(string.sub(stored[i], sep + 1))
      b.level = math.min(b.burst, tonumber(string.sub(stored[i], 1, sep - 1)) + elapsed * b.rate / 1000)
    end
    if b.level < 1 then wait = math.max(wait, math.ceil((1 - b.level) * 1000 / b.rate)) end
  end
  if wait > 0 then return wait end
  for _, b in ipairs(on) do
    local left = b.level - 1
    redis.call('SET', b.key, left .. ':' .. now, 'PX', math.max(1, math.ceil((b.burst - left) * 1000 / b.rate)))
  end
  return 0
end

-- The two buckets of a claim from KEYS[vKey], KEYS[vKey + 1] and four ARGV values from `arg`:
-- voucher rate, voucher burst, user rate, user burst.
local function sk_claim_buckets(vKey, arg)
  return {
    {key = KEYS[vKey], rate = tonumber(ARGV[arg]), burst = tonumber(ARGV[arg + 1])},
    {key = KEYS[vKey + 1], rate = tonumber(ARGV[arg + 2]), burst = tonumber(ARGV[arg + 3])},
  }
end
