-- release: give back a Snowflake worker-id lease held by the caller.
-- KEYS[1] lease key  KEYS[2] high-water key
-- ARGV[1] owner token  ARGV[2] last timestamp issued by the caller
-- Returns 1 when released, 0 when the caller did not hold it.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local hwm = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) > hwm then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('DEL', KEYS[1])
return 1
