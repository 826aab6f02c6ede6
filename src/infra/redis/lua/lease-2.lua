-- lease: take or renew a Snowflake worker-id lease.
-- KEYS[1] lease key  KEYS[2] high-water key (last timestamp issued under this worker id)
-- ARGV[1] owner token  ARGV[2] lease ttl ms  ARGV[3] timestamp issued so far by the caller (0 if none)
-- Returns the high-water timestamp to start from (>= 0) when the caller holds the lease, -1 when
-- another owner holds it.
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local hwm = tonumber(redis.call('GET', KEYS[2]) or '0')
local issued = tonumber(ARGV[3])
if issued > hwm then
  hwm = issued
  redis.call('SET', KEYS[2], hwm)
end
return hwm
