// The console's figures from the Prometheus text of /metrics: claims per second by outcome, claim
// latency, pipeline lag and the stores' server changes. That text is the sum over every API
// process of a supervisor (cluster-metrics.ts), so the figures are the instance's or the
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

const LAG_LINE = /^seckill_pipeline_lag_seconds ([0-9.e+-]+)$/m;
const BUCKET_LINE = /^seckill_claim_duration_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} ([0-9.e+]+)$/gm;

/** The pipeline's lag (seconds), or null where this process has no pipeline. */
export function pipelineLag(text: string): number | null {
  const match = LAG_LINE.exec(text);
  return match ? Number(match[1]) : null;
}

/** Claim latency histogram: cumulative count per upper bound (seconds), every outcome summed. */
export function latencyBuckets(text: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const [, le, value] of text.matchAll(BUCKET_LINE)) {
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(value));
  }
  return buckets;
}

/**
 * The q-quantile (ms) of the claims between two readings: the upper bound of the first bucket that
 * holds it (a histogram says no more); null without claims in between.
 */
export function latencyQuantileMs(before: Map<number, number>, after: Map<number, number>, q: number): number | null {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return null;
  for (const bound of bounds) {
    if ((after.get(bound) ?? 0) - (before.get(bound) ?? 0) >= q * total) return Number.isFinite(bound) ? bound * 1000 : null;
  }
  return null;
}

const MASTER_LINE = /^seckill_redis_master_changes_total ([0-9.e+]+)$/m;
const SERVER_LINE = /^seckill_database_server_changes_total ([0-9.e+]+)$/m;

/** How often Redis answered from another master and another database server answered (counters). */
export function serverChanges(text: string): { redisMaster: number; databaseServer: number } {
  const count = (line: RegExp) => Number(line.exec(text)?.[1] ?? 0);
  return { redisMaster: count(MASTER_LINE), databaseServer: count(SERVER_LINE) };
}
