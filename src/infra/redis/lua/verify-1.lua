-- verify: the master side of verifying a voucher segment against the database after a master
-- change (consistency/verification.ts). Admissions wait until the segment's verifiedOn is this
-- master's replication id (admit-n.lua, lib/master.lua).
-- KEYS[1] voucher hash
-- ARGV[1] "" to ask; else the replication id the verification began on, to stamp it with
-- Asking returns {replication id of this master, 1 when the segment is verified on it else 0}
-- (0 also when the segment has no state). Stamping returns 1, or 0 when this is another master
-- by now (a second change during the verification: it starts again) or the state is gone.
--! include lib/master.lua
local master = sk_master()
if ARGV[1] == '' then
  local verifiedOn = redis.call('HGET', KEYS[1], 'verifiedOn')
  return {master, verifiedOn == master and 1 or 0}
end
if master ~= ARGV[1] or redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'verifiedOn', master)
return 1
