// The figures of a set of samples the benches report: a percentile (the latency of a request, the
// lateness of an expiry) and a median (of rounds, of repeated timings).

const ascending = (values: readonly number[]) => [...values].sort((a, b) => a - b);

/** The sample at percentile `p` (0..100): the smallest one at or above that share of them; NaN when there is none. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = ascending(values);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

/** The middle sample, or the mean of the two middle ones; NaN when there is none. */
export function median(values: readonly number[]): number {
  const sorted = ascending(values);
  const m = sorted.length >> 1;
  if (sorted.length === 0) return NaN;
  return sorted.length % 2 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
}
