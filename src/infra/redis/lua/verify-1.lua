-- verify: the master side of verifying a voucher segment against the database after a master
-- change (consistency/verification.ts). Admissions wait until the segment's verifiedOn is this
-- master's replication id (admit-n.lua, lib/master.lua).
-- KEYS[1] voucher hash
-- ARGV[1] ASK ("") to ask; else the replication id the verification began on, to stamp it with
-- Asking returns {replication id of this master, VERIFIED (1) when the segment is verified on it
-- else NOT_VERIFIED (0, also when the segment has no state)}. Stamping returns STAMPED (1), or
-- NOT_STAMPED (0) when this is another master by now (a second change during the verification:
-- it starts again) or the state is gone.
--! include lib/master.lua
local ASK = ''
local VERIFIED, NOT_VERIFIED = 1, 0
local STAMPED, NOT_STAMPED = 1, 0
local voucherKey = KEYS[1]
local stampWith = ARGV[1]
local master = sk_master()
if stampWith == ASK then
  local verifiedOn = redis.call('HGET', voucherKey, 'verifiedOn')
  return {master, verifiedOn == master and VERIFIED or NOT_VERIFIED}
end
if master ~= stampWith or redis.call('EXISTS', voucherKey) == 0 then return NOT_STAMPED end
redis.call('HSET', voucherKey, 'verifiedOn', master)
return STAMPED
