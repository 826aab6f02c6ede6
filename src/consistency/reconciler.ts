// Reconciliation: the database is the truth, Redis the fast gate; this finds where Redis has
// drifted and moves it back, and finishes work a lost process or a lost timer left undone.
//
// Per voucher, under its lock: overdue unpaid orders are expired and stuck releases relayed (any
// kind); for a seckill voucher, Redis is compared with the database and repaired toward it
// (redis-repair.ts): its stock and in-flight orders every time, its buyer counts a slice per pass
// (buyer-slices.ts) unless all are asked for. The report is kept for the console.
import type { RedisClient } from '../infra/redis/client.js';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { RefreshSafeMutex } from '../infra/redis/mutex.js';
import { AppError } from '../errors.js';
import { dialectOf, type SqlDialect } from '../infra/db/dialect.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { ReleaseRelay } from '../lifecycle/release-relay.js';
import type { Releases } from '../lifecycle/releases.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { RETAIN_AFTER_END_MS } from '../vouchers/redis-state.js';
import type { Voucher } from '../vouchers/voucher.js';
import { kindOf, kindsWhere } from '../vouchers/kinds.js';
import { type BuyerSlices, createBuyerSlices } from './buyer-slices.js';
import { type BuyersCompared, type CleanMarks, type RedisRepairDeps, repairRedisState } from './redis-repair.js';
import type { Drift, DriftKind } from './drift.js';

export type { Drift, DriftKind };

/** Unpaid orders this far past their deadline were missed by the payment timer. */
const OVERDUE_GRACE_S = 5;
/** Outbox rows this old were left by a relay that died. */
const OUTBOX_GRACE_S = 5;
const LAST_REPORT_KEPT_S = 7 * 24 * 3600;
const DRIFT_KEPT = 100;

/** The last reconciliation of a voucher, as the console shows it (reconcileVoucher keeps it). */
export async function lastReconciliation(redis: RedisClient, keys: KeySpace, voucherId: bigint): Promise<(ReconcileReport & { at: string }) | null> {
  const kept = await redis.get(keys.lastReconcile(voucherId));
  return kept ? (JSON.parse(kept) as ReconcileReport & { at: string }) : null;
}

export interface ReconcileReport {
  voucherId: string;
  /** false when Redis kept changing and the comparison could not be made this time. */
  verified: boolean;
  drift: Drift[];
  repaired: number;
  /** The buyer counts compared (seckill vouchers; none when the voucher was unchanged since a clean comparison). */
  buyers: BuyersCompared;
}

export interface ReconcileOptions {
  /** Compare every buyer count now, not the next slice (the verification after a master change, an operator's request). */
  allBuyers?: boolean;
}

export interface Reconciler {
  reconcileVoucher(voucherId: bigint, options?: ReconcileOptions): Promise<ReconcileReport>;
  /** Every seckill voucher whose Redis state is still kept, and every voucher with overdue orders. */
  reconcileAll(): Promise<ReconcileReport[]>;
}

export interface ReconcilerDeps extends RedisRepairDeps {
  directory: VoucherDirectory;
  releaseRelay: ReleaseRelay;
  releases: Releases;
  log: Logger;
  onRepair?(kind: DriftKind): void;
  /** Buyer counts compared per pass (buyer-slices.ts' default unless set). */
  buyersPerPass?: number;
  /**
   * Runs before a run compares Redis with the database (once per pass over every voucher): orders
   * a failed-over database lost go back in flight first (lost-orders.ts), or the comparison would
   * move Redis toward the loss.
   */
  beforeComparing?(): Promise<unknown>;
}

/** The deps with the database's dialect, looked up once, the vouchers last found clean and where each one's lap over its buyers is. */
type Context = ReconcilerDeps & { dialect: SqlDialect; clean: CleanMarks; slices: BuyerSlices };

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const slices = createBuyerSlices({ db: deps.db, redis: deps.redis, keys: deps.keys, size: deps.buyersPerPass });
  const context: Context = { ...deps, dialect: dialectOf(deps.db), clean: new Map(), slices };
  return {
    async reconcileVoucher(voucherId, options) {
      await deps.beforeComparing?.();
      return reconcileVoucher(context, voucherId, options);
    },
    async reconcileAll() {
      await deps.beforeComparing?.();
      const reports: ReconcileReport[] = [];
      for (const id of await vouchersToReconcile(context)) {
        try {
          reports.push(await reconcileVoucher(context, BigInt(id)));
        } catch (err) {
          deps.log.warn({ err, voucherId: id }, 'reconciliation of a voucher failed; next run retries');
        }
      }
      return reports;
    },
  };
}

async function reconcileVoucher(c: Context, voucherId: bigint, { allBuyers = false }: ReconcileOptions = {}): Promise<ReconcileReport> {
  const voucher = await c.directory.getStored(voucherId);
  if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
  const report: ReconcileReport = { voucherId: voucherId.toString(), verified: true, drift: [], repaired: 0, buyers: { compared: 0, all: false } };
  const note = noteInto(c, report);
  // One reconciliation of a voucher at a time (scheduled, on demand, or verifying after a master
  // change): repairs are offsets. Short and refreshed often: a promoted replica may hold a
  // lock whose release never reached it, and a verification waits for that lock to expire.
  const mutex = new RefreshSafeMutex(c.redis, c.keys.reconcileLock(voucherId), {
    lockTimeout: 5_000,
    refreshInterval: 1_000,
    acquireAttemptsLimit: 1,
    onLockLost: (err) => c.log.warn({ err, voucherId: report.voucherId }, 'reconciliation lock lost'),
  });
  if (!(await mutex.tryAcquire())) return { ...report, verified: false };
  try {
    await expireOverdueOrders(c, voucher, note);
    await relayStuckReleases(c, voucher, note);
    if (kindOf(voucher).redisGated) {
      const outcome = await repairRedisState(c, voucher, note, c.clean, allBuyers ? null : c.slices);
      report.verified = outcome.verified;
      report.buyers = outcome.buyers;
    }
    // Kept for the console (whichever instance ran it); a week, like the voucher's other keys. The
    // first drifts only: after a loss of Redis data a report can name every order in flight.
    const kept = JSON.stringify({ ...report, drift: report.drift.slice(0, DRIFT_KEPT), at: new Date().toISOString() });
    await c.redis.set(c.keys.lastReconcile(voucherId), kept, 'EX', LAST_REPORT_KEPT_S).catch(() => undefined);
    return report;
  } finally {
    await mutex.release().catch(() => undefined);
  }
}

/** Adds a drift to the report; a repaired one is also counted, metered and logged. */
function noteInto({ log, onRepair }: Context, report: ReconcileReport): (d: Drift) => void {
  return (d) => {
    report.drift.push(d);
    if (!d.repaired) return;
    report.repaired += 1;
    onRepair?.(d.kind);
    log.warn({ voucherId: report.voucherId, kind: d.kind, detail: d.detail }, 'reconciliation repaired drift');
  };
}

/** Every seckill voucher whose Redis state is still kept, and every voucher with overdue orders. */
async function vouchersToReconcile({ db, dialect }: Context): Promise<string[]> {
  const rows = await db
    .selectFrom('vouchers')
    .select('id')
    .where((eb) =>
      eb.or([
        eb.and([eb('kind', 'in', kindsWhere('redisGated')), eb('end_at', '>', dialect.nowPlusSeconds(-RETAIN_AFTER_END_MS / 1000))]),
        eb(
          'id',
          'in',
          eb
            .selectFrom('orders')
            .select('voucher_id')
            .where('status', '=', 'pending_payment')
            .where('expires_at', '<', dialect.nowPlusSeconds(-OVERDUE_GRACE_S)),
        ),
      ]),
    )
    .execute();
  return rows.map((r) => r.id);
}

/** Unpaid orders the payment timer missed: expired now (their units given back). */
async function expireOverdueOrders({ db, dialect, releases }: Context, voucher: Voucher, note: (d: Drift) => void) {
  const overdue = await db
    .selectFrom('orders')
    .select(sql<number>`count(*)`.as('n'))
    .where('voucher_id', '=', voucher.id.toString())
    .where('status', '=', 'pending_payment')
    .where('expires_at', '<', dialect.nowPlusSeconds(-OVERDUE_GRACE_S))
    .executeTakeFirstOrThrow();
  if (Number(overdue.n) === 0) return;
  const expired = await releases.expireDue({ limit: Number(overdue.n) * 2, voucherId: voucher.id });
  note({ kind: 'overdue_orders', detail: `${overdue.n} unpaid order(s) past their deadline; ${expired} expired now`, repaired: expired > 0 });
}

/** Releases committed in the database but never given back to Redis: the relay is drained. */
async function relayStuckReleases({ db, dialect, releaseRelay }: Context, voucher: Voucher, note: (d: Drift) => void) {
  const stuck = await db
    .selectFrom('release_outbox')
    .select(sql<number>`count(*)`.as('n'))
    .where('voucher_id', '=', voucher.id.toString())
    .where('created_at', '<', dialect.nowPlusSeconds(-OUTBOX_GRACE_S))
    .executeTakeFirstOrThrow();
  if (Number(stuck.n) === 0) return;
  const relayed = await releaseRelay.drain();
  note({ kind: 'stuck_outbox', detail: `${stuck.n} release(s) not given back to Redis; relayed ${relayed}`, repaired: relayed > 0 });
}
