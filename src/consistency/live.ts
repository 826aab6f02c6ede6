// The operator console's view of one voucher, one snapshot a second (GET /api/vouchers/:id/live):
// the stores' stats, claims per second by outcome (all vouchers, from the metrics counters),
// this voucher's admissions per second (from the stores: orders plus in-flight, so every instance
// counts) and, every few seconds, the audit's verdict. One Live per open stream: it keeps the
// previous reading to turn counters into rates.
import type { VoucherAudit } from './audit.js';
import { claimCounters, ratesBetween } from './claim-rates.js';
import type { VoucherStats } from './stats.js';

/** The audit reads more than the stats: it runs on the first snapshot, then every this many. */
export const AUDIT_EVERY = 10;

export interface LiveDeps {
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  auditVoucher(voucherId: bigint): Promise<VoucherAudit | null>;
  /** Prometheus text of /metrics. */
  metricsText(): Promise<string>;
  now?: () => number;
}

export interface AuditVerdict {
  ok: boolean;
  /** Names of the checks that failed, with their first problem. */
  failed: { name: string; problem: string }[];
  at: string;
}

export interface LiveSnapshot {
  at: string;
  stats: VoucherStats;
  /** All vouchers, by outcome of the admission (seckill_claims_total). */
  claimsPerSecond: Record<string, number>;
  /** Units of this voucher admitted per second (stored orders plus in flight). */
  admissionsPerSecond: number;
  /** Present on the snapshots the audit ran for. */
  audit?: AuditVerdict;
}

export function auditVerdict(audit: VoucherAudit, at: Date): AuditVerdict {
  return {
    ok: audit.ok,
    failed: audit.checks.filter((c) => !c.ok).map((c) => ({ name: c.name, problem: c.problems[0] ?? '' })),
    at: at.toISOString(),
  };
}

const admittedOf = (s: VoucherStats) => Object.values(s.orders).reduce((n, c) => n + c, 0) + s.inFlight;

export function createLive(voucherId: bigint, deps: LiveDeps) {
  const now = deps.now ?? Date.now;
  let previous: { at: number; counters: Record<string, number>; admitted: number } | null = null;
  let ticks = 0;
  /** The next snapshot; throws VOUCHER_NOT_FOUND (or a store's error) like the stats route. */
  return async function next(): Promise<LiveSnapshot> {
    const runAudit = ticks++ % AUDIT_EVERY === 0;
    const [stats, text, audit] = await Promise.all([
      deps.voucherStats(voucherId),
      deps.metricsText(),
      runAudit ? deps.auditVoucher(voucherId) : Promise.resolve(null),
    ]);
    const at = now();
    const counters = claimCounters(text);
    const admitted = admittedOf(stats);
    const seconds = previous ? (at - previous.at) / 1000 : 0;
    const snapshot: LiveSnapshot = {
      at: new Date(at).toISOString(),
      stats,
      claimsPerSecond: previous ? ratesBetween(previous.counters, counters, seconds) : {},
      admissionsPerSecond: previous && seconds > 0 ? Math.round((Math.max(0, admitted - previous.admitted) / seconds) * 10) / 10 : 0,
      ...(audit ? { audit: auditVerdict(audit, new Date(at)) } : {}),
    };
    previous = { at, counters, admitted };
    return snapshot;
  };
}
