-- Time for every script comes from Redis (never from the caller), through this.
-- Redis TIME as {ms, µs-as-string}; the string keeps full precision for sorted-set scores.
local function sk_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t[1] .. string.format('%06d', tonumber(t[2]))
end
