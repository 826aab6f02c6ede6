-- A queue voucher's answers (queue-7.lua), decoded by answerAt in scripts/queue.ts.
--! include lib/codes.lua

-- A buyer's code: IN_QUEUE (their standing follows), NOT_IN_QUEUE (a look by a buyer who never
-- joined), or a refusal of a new buyer numbered as a claim's (lib/codes.lua).
local SK_QUEUE = {
  IN_QUEUE = 0,
  NOT_STARTED = SK_CODE.NOT_STARTED, -- before opensAt
  ENDED = SK_CODE.ENDED,
  SOLD_OUT = SK_CODE.SOLD_OUT, -- the queue is closed
  NOT_IN_QUEUE = 11,
}

-- Appends one buyer's answer to `out`: ten values, {code, state, place, ahead, orderId, promote
-- 0|1, openedAt, drawAdmitted, admitted, now}. standing (IN_QUEUE only): state, place and ahead
-- (nil until the draw placed everyone), orderId (admitted), promote, openedAt (nil until the
-- draw's admissions are done), drawAdmitted, admitted; a refusal carries only its code and now.
local function sk_queue_reply(out, now, code, standing)
  standing = standing or {}
  local n = #out
  out[n + 1] = code
  out[n + 2] = standing.state or ''
  out[n + 3] = standing.place or ''
  out[n + 4] = standing.ahead or ''
  out[n + 5] = standing.orderId or ''
  out[n + 6] = standing.promote and 1 or 0
  out[n + 7] = standing.openedAt or ''
  out[n + 8] = standing.drawAdmitted or 0
  out[n + 9] = standing.admitted or 0
  out[n + 10] = now
end
