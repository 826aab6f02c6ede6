-- snapshot: the users of a sold-out voucher whose claim may get another answer than a plain
-- SOLD_OUT (waitlisted: false), for API processes that answer sold-out claims from memory:
-- those with an idempotency record (a retry may be a replay) and those on the waitlist.
-- KEYS[1] voucher hash  KEYS[2] idempotency hash ("userId:key" -> ...)  KEYS[3] waitlist zset
-- ARGV[1] most users to return (bounds the time Redis spends here)
-- Returns {version, n, n userIds with idempotency records..., waiting userIds...}, or {version, -1}
-- when the lists are longer than ARGV[1]. The version, "builtAt.listAdditions" as admit-n.lua
-- answers it, is read atomically with the lists: builtAt changes when the state is rebuilt,
-- listAdditions whenever admit adds a user to either list. (Restock only takes users off the
-- waitlist, after which it is not full, so no sold-out flag stands until an enrolment has moved
-- the version again.)
local v = redis.call('HMGET', KEYS[1], 'builtAt', 'listAdditions')
local version = (v[1] or '') .. '.' .. (v[2] or '0')
if redis.call('HLEN', KEYS[2]) + redis.call('ZCARD', KEYS[3]) > tonumber(ARGV[1]) then return {version, -1} end
local out, seen = {version, 0}, {}
for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
  local user = string.sub(field, 1, string.find(field, ':', 1, true) - 1)
  if not seen[user] then
    seen[user] = true
    out[#out + 1] = user
  end
end
out[2] = #out - 2
for _, user in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do out[#out + 1] = user end
return out
