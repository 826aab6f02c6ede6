-- lease-end: give back a Snowflake worker-id lease held by the caller, keeping the last timestamp
-- it issued as the high water its successor starts after.
-- KEYS[1] lease key  KEYS[2] high-water key
-- ARGV[1] owner token  ARGV[2] last timestamp issued by the caller
-- Returns ENDED (1) when the lease is given back, NOT_HELD (0) when the caller did not hold it.
local ENDED, NOT_HELD = 1, 0
local leaseKey, highWaterKey = KEYS[1], KEYS[2]
local owner, issued = ARGV[1], tonumber(ARGV[2])
if redis.call('GET', leaseKey) ~= owner then return NOT_HELD end
local highWater = tonumber(redis.call('GET', highWaterKey) or '0')
if issued > highWater then redis.call('SET', highWaterKey, issued) end
redis.call('DEL', leaseKey)
return ENDED
