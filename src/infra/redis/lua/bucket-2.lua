-- bucket: take one token from a claim's voucher bucket and user bucket (limited and common
-- vouchers; a seckill claim takes its tokens inside admit, in the same round trip).
-- KEYS[1] voucher bucket  KEYS[2] user bucket (per voucher and user; both in the voucher's slot)
-- ARGV[1] voucher rate (tokens/s; 0: off)  ARGV[2] voucher burst  ARGV[3] user rate  ARGV[4] user burst
-- Returns 0 when both tokens were taken, else the ms until both buckets have one (nothing taken).
--! include lib/time.lua
--! include lib/bucket.lua
local voucherBucketKey, userBucketKey = KEYS[1], KEYS[2]
local vRate, vBurst, uRate, uBurst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
return sk_take_tokens({
  {key = voucherBucketKey, rate = vRate, burst = vBurst},
  {key = userBucketKey, rate = uRate, burst = uBurst},
}, sk_now())
