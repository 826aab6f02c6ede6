-- warm: create a voucher's Redis state unless it already exists (never overwrite live state).
-- KEYS[1] voucher hash  KEYS[2] buyers hash  KEYS[3] released hash (both already filled by the
-- caller while KEYS[1] was absent)
-- ARGV[1] stock  ARGV[2] begin ms  ARGV[3] end ms  ARGV[4] per-user limit  ARGV[5] in-flight orders
-- ARGV[6] expire-at unix seconds (keys outlive the sale window by a grace period)
-- ARGV[7] waitlist capacity (0: no waitlist)
-- Sets builtAt, the Redis time (µs) of this build, and verifiedOn, this master: state built from
-- the database is what the database implies (fields: KeySpace.voucher in keys.ts).
-- Returns 1 when created, 0 when the state was already there.
--! include lib/master.lua
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'stock', ARGV[1], 'begin', ARGV[2], 'end', ARGV[3], 'limit', ARGV[4], 'inflight', ARGV[5],
  'expire', ARGV[6], 'waitcap', ARGV[7], 'builtAt', t[1] .. string.format('%06d', tonumber(t[2])), 'verifiedOn', sk_master())
redis.call('EXPIREAT', KEYS[1], ARGV[6])
for i = 2, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('EXPIREAT', KEYS[i], ARGV[6]) end
end
return 1
