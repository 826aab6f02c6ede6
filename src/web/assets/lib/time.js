// A sale's phase and the time to its next change, for both pages.
/** @param {{beginAt: string, endAt: string}} v @param {number} [now] */
export function phaseOf(v, now = Date.now()) {
  const begin = Date.parse(v.beginAt);
  const end = Date.parse(v.endAt);
  if (now < begin) return { phase: 'upcoming', msLeft: begin - now };
  if (now < end) return { phase: 'open', msLeft: end - now };
  return { phase: 'ended', msLeft: 0 };
}

/** 1d 02:03:04 / 02:03:04 / 03:04 @param {number} ms */
export function countdown(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400);
  const hh = String(Math.floor((s % 86400) / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return d ? `${d}d ${hh}:${mm}:${ss}` : hh === '00' ? `${mm}:${ss}` : `${hh}:${mm}:${ss}`;
}
