-- bucket: take one token from a claim's voucher bucket and user bucket (limited and common
-- vouchers; a seckill claim takes its tokens inside admit, in the same round trip).
-- KEYS[1] voucher bucket  KEYS[2] user bucket (per voucher and user; both in the voucher's slot)
-- ARGV[1] voucher rate (tokens/s; 0: off)  ARGV[2] voucher burst  ARGV[3] user rate  ARGV[4] user burst
-- Returns 0 when both tokens were taken, else the ms until both buckets have one (nothing taken).
--! include lib/time.lua
--! include lib/bucket.lua
return sk_take_tokens({
  {key = KEYS[1], rate = tonumber(ARGV[1]), burst = tonumber(ARGV[2])},
  {key = KEYS[2], rate = tonumber(ARGV[3]), burst = tonumber(ARGV[4])},
}, sk_now())
