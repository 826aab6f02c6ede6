// The operator console's view of one voucher, one snapshot a second (GET /api/vouchers/:id/live):
// the stores' stats, claims per second by outcome (all vouchers, from the metrics counters),
// this voucher's admissions per second (from the stores: orders plus in-flight, so every instance
// counts) and, every few seconds, the audit's verdict. One Live per open stream: it keeps the
// previous reading to turn counters into rates.
import { claimCounters, latencyBuckets, latencyQuantileMs, pipelineLag, ratesBetween, serverChanges } from './claim-rates.js';
import type { VoucherStats } from './stats.js';

/** The audit reads more than the stats: it runs on the first snapshot, then every this many. */
export const AUDIT_EVERY = 10;

/** What the view shows of an audit (consistency/audit.ts): its verdict and each check's first problem. */
export interface AuditShown {
  ok: boolean;
  checks: { name: string; ok: boolean; problems: string[] }[];
}

/** What the view shows of a reconciliation (consistency/reconciler.ts' report, with when it ran). */
export interface ReconciliationShown {
  at: string;
  verified: boolean;
  repaired: number;
  drift: { kind: string; detail: string; repaired: boolean }[];
}

export interface LiveDeps {
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  auditVoucher(voucherId: bigint): Promise<AuditShown | null>;
  /** Prometheus text of /metrics. */
  metricsText(): Promise<string>;
  /** The voucher's last reconciliation (any instance's), or null. */
  lastReconciliation(voucherId: bigint): Promise<ReconciliationShown | null>;
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
  /** Claim latency over the last second, all vouchers (ms, a histogram bucket's upper bound); null without claims. */
  claimLatencyMs: { p50: number | null; p99: number | null };
  /** Age of the oldest admitted order the pipeline is storing (seconds); null without a pipeline here. */
  pipelineLagSeconds: number | null;
  /** Redis master changes and database server changes since the previous snapshot (0 on the first): the charts' markers. */
  changes: { redisMaster: number; databaseServer: number };
  /** The last reconciliation of this voucher and its repairs. */
  lastReconciliation: { at: string; verified: boolean; repaired: number; drift: string[] } | null;
  /** Present on the snapshots the audit ran for. */
  audit?: AuditVerdict;
}

export function auditVerdict(audit: AuditShown, at: Date): AuditVerdict {
  return {
    ok: audit.ok,
    failed: audit.checks.filter((c) => !c.ok).map((c) => ({ name: c.name, problem: c.problems[0] ?? '' })),
    at: at.toISOString(),
  };
}

const admittedOf = (s: VoucherStats) => Object.values(s.orders).reduce((n, c) => n + c, 0) + s.inFlight;

export function createLive(voucherId: bigint, deps: LiveDeps) {
  const now = deps.now ?? Date.now;
  let previous: { at: number; counters: Record<string, number>; admitted: number; latency: Map<number, number>; servers: ReturnType<typeof serverChanges> } | null = null;
  let ticks = 0;
  /** The next snapshot; throws VOUCHER_NOT_FOUND (or a store's error) like the stats route. */
  return async function next(): Promise<LiveSnapshot> {
    const runAudit = ticks++ % AUDIT_EVERY === 0;
    const [stats, text, audit, reconciled] = await Promise.all([
      deps.voucherStats(voucherId),
      deps.metricsText(),
      runAudit ? deps.auditVoucher(voucherId) : Promise.resolve(null),
      deps.lastReconciliation(voucherId),
    ]);
    const at = now();
    const counters = claimCounters(text);
    const latency = latencyBuckets(text);
    const admitted = admittedOf(stats);
    const servers = serverChanges(text);
    const seconds = previous ? (at - previous.at) / 1000 : 0;
    const snapshot: LiveSnapshot = {
      at: new Date(at).toISOString(),
      stats,
      claimsPerSecond: previous ? ratesBetween(previous.counters, counters, seconds) : {},
      admissionsPerSecond: previous && seconds > 0 ? Math.round((Math.max(0, admitted - previous.admitted) / seconds) * 10) / 10 : 0,
      claimLatencyMs: previous ? { p50: latencyQuantileMs(previous.latency, latency, 0.5), p99: latencyQuantileMs(previous.latency, latency, 0.99) } : { p50: null, p99: null },
      pipelineLagSeconds: pipelineLag(text),
      changes: {
        redisMaster: previous ? Math.max(0, servers.redisMaster - previous.servers.redisMaster) : 0,
        databaseServer: previous ? Math.max(0, servers.databaseServer - previous.servers.databaseServer) : 0,
      },
      lastReconciliation: reconciled && {
        at: reconciled.at,
        verified: reconciled.verified,
        repaired: reconciled.repaired,
        drift: reconciled.drift.map((d) => `${d.kind}${d.repaired ? ' (repaired)' : ''}: ${d.detail}`),
      },
      ...(audit ? { audit: auditVerdict(audit, new Date(at)) } : {}),
    };
    previous = { at, counters, admitted, latency, servers };
    return snapshot;
  };
}
