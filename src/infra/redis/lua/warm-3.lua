-- warm: create a voucher's Redis state unless it already exists (never overwrite live state).
-- KEYS[1] voucher hash  KEYS[2] buyers hash  KEYS[3] released hash (both already filled by the
-- caller while KEYS[1] was absent)
-- ARGV[1] stock  ARGV[2] begin ms  ARGV[3] end ms  ARGV[4] per-user limit  ARGV[5] in-flight orders
-- ARGV[6] expire-at unix seconds (keys outlive the sale window by a grace period)
-- ARGV[7] waitlist capacity (0: no waitlist)
-- Sets builtAt, the Redis time (µs) of this build, and verifiedOn, this master: state built from
-- the database is what the database implies (fields: KeySpace.voucher in keys.ts).
-- Returns CREATED (1) when created, EXISTED (0) when the state was already there.
--! include lib/time.lua
--! include lib/master.lua
local CREATED, EXISTED = 1, 0
local voucherKey, buyersKey, releasedKey = KEYS[1], KEYS[2], KEYS[3]
local stock, beginAt, endAt, limit, inflight, expireAt, waitCap = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if redis.call('EXISTS', voucherKey) == 1 then return EXISTED end
local _, builtAt = sk_now()
redis.call('HSET', voucherKey, 'stock', stock, 'begin', beginAt, 'end', endAt, 'limit', limit, 'inflight', inflight,
  'expire', expireAt, 'waitcap', waitCap, 'builtAt', builtAt, 'verifiedOn', sk_master())
redis.call('EXPIREAT', voucherKey, expireAt)
for _, key in ipairs({buyersKey, releasedKey}) do
  if redis.call('EXISTS', key) == 1 then redis.call('EXPIREAT', key, expireAt) end
end
return CREATED
