-- lease: take or renew a Snowflake worker-id lease.
-- KEYS[1] lease key  KEYS[2] high-water key (last timestamp issued under this worker id)
-- ARGV[1] owner token  ARGV[2] lease ttl ms  ARGV[3] timestamp issued so far by the caller (0 if none)
-- Returns the high-water timestamp to start from (>= 0) when the caller holds the lease,
-- HELD_ELSEWHERE (-1) when another owner holds it.
local HELD_ELSEWHERE = -1
local leaseKey, highWaterKey = KEYS[1], KEYS[2]
local owner, ttlMs, issued = ARGV[1], ARGV[2], tonumber(ARGV[3])
local holder = redis.call('GET', leaseKey)
if holder and holder ~= owner then return HELD_ELSEWHERE end
redis.call('SET', leaseKey, owner, 'PX', ttlMs)
local highWater = tonumber(redis.call('GET', highWaterKey) or '0')
if issued > highWater then
  highWater = issued
  redis.call('SET', highWaterKey, highWater)
end
return highWater
