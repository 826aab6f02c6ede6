// Claims per second by outcome, from the Prometheus text of /metrics: that text is the sum over
// every API process of a supervisor (cluster-metrics.ts), so the rates are the instance's or the
// cluster's, whichever /metrics answers. Counters only grow; a drop (a process restarted) counts 0.

const CLAIM_LINE = /^seckill_claims_total\{outcome="([a-z_]+)"\} ([0-9.e+]+)$/gm;

/** Each outcome's counter value in a Prometheus text exposition. */
export function claimCounters(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [, outcome, value] of text.matchAll(CLAIM_LINE)) out[outcome!] = (out[outcome!] ?? 0) + Number(value);
  return out;
}

/** Per-second rates between two readings `seconds` apart (outcomes of either reading). */
export function ratesBetween(before: Record<string, number>, after: Record<string, number>, seconds: number): Record<string, number> {
  const rates: Record<string, number> = {};
  if (seconds <= 0) return rates;
  for (const outcome of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const delta = (after[outcome] ?? 0) - (before[outcome] ?? 0);
    rates[outcome] = Math.round((Math.max(0, delta) / seconds) * 10) / 10;
  }
  return rates;
}
