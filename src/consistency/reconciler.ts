// Reconciliation: the database is the truth, Redis the fast gate; this finds where Redis has
// drifted and moves it back, and finishes work a lost process or a lost timer left undone.
//
// Per voucher: overdue unpaid orders are expired and stuck releases relayed (any kind); for a
// seckill voucher, missing Redis state is rebuilt, and an exact observation of both stores
// (observe.ts) is compared: stock, in-flight count and buyer counts, in-flight records whose stream
// entry is gone (requeued: the buyer holds a 202), unacknowledged entries whose record is gone
// (adopted), and records of orders stored long ago (settled). Nothing is repaired on one sighting:
// a second observation must show the same drift, and count repairs are a compare-and-set on the
// voucher's `ver`, so a repair never races the traffic it corrects. Repairs only ever set Redis to
// what the database implies, so Redis never grants a unit the database cannot fulfil.
import type { RedisClient } from '../infra/redis/client.js';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { Mutex } from 'redis-semaphore';
import { AppError } from '../errors.js';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { ReleaseRelay } from '../lifecycle/release-relay.js';
import type { Releases } from '../lifecycle/releases.js';
import { ensureConsumerGroups } from '../pipeline/consumer.js';
import { CONSUMER_GROUP, hasConsumerGroup, unacknowledgedEntries } from '../pipeline/maintenance.js';
import { settleInput, settlementOfRow } from '../pipeline/settlement.js';
import { type InflightOrder, inflightOfEntry, isMalformed, parseEntry } from '../infra/redis/records.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { RETAIN_AFTER_END_MS, type VoucherRedisState } from '../vouchers/redis-state.js';
import type { Voucher } from '../vouchers/voucher.js';
import { type CountDrift, countDrift, IN_CHUNK, type Observation, observeVoucher } from './observe.js';
import { kindOf, kindsWhere } from '../vouchers/kinds.js';
import type { SegmentMoves } from '../vouchers/segment-moves.js';
import { homeShard, segmentShards } from '../vouchers/segments.js';
import type { Correction } from '../infra/redis/scripts/reconcile.js';

/** An order stored this long ago whose in-flight record is still there lost its settlement. */
const SETTLE_GRACE_MS = 5_000;
/** Unpaid orders this far past their deadline were missed by the payment timer. */
const OVERDUE_GRACE_S = 5;
/** Outbox rows this old were left by a relay that died. */
const OUTBOX_GRACE_S = 5;
const ENTRIES_SCANNED = 10_000;
const LAST_REPORT_KEPT_S = 7 * 24 * 3600;

/** The last reconciliation of a voucher, as the console shows it (reconcileVoucher keeps it). */
export async function lastReconciliation(redis: RedisClient, keys: KeySpace, voucherId: bigint): Promise<(ReconcileReport & { at: string }) | null> {
  const kept = await redis.get(keys.lastReconcile(voucherId));
  return kept ? (JSON.parse(kept) as ReconcileReport & { at: string }) : null;
}

export type DriftKind =
  | 'state_missing'
  | 'stock'
  | 'inflight_counter'
  | 'buyer'
  | 'lost_entry'
  | 'lost_inflight_record'
  | 'unsettled_order'
  | 'overdue_orders'
  | 'stuck_outbox'
  | 'consumer_group_missing'
  | 'unfinished_move';

export interface Drift {
  kind: DriftKind;
  detail: string;
  repaired: boolean;
}

export interface ReconcileReport {
  voucherId: string;
  /** false when Redis kept changing and the comparison could not be made this time. */
  verified: boolean;
  drift: Drift[];
  repaired: number;
}

export interface Reconciler {
  reconcileVoucher(voucherId: bigint): Promise<ReconcileReport>;
  /** Every seckill voucher whose Redis state is still kept, and every voucher with overdue orders. */
  reconcileAll(): Promise<ReconcileReport[]>;
}

export interface ReconcilerDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  directory: VoucherDirectory;
  redisState: VoucherRedisState;
  moves: SegmentMoves;
  /**
   * A move between two segments lent this long ago lost its mover (segment-moves.ts): longer than
   * a live mover can take (each step is bounded by the Redis command timeout).
   */
  staleMoveMs: number;
  releaseRelay: ReleaseRelay;
  releases: Releases;
  log: Logger;
  onRepair?(kind: DriftKind): void;
  /** Units of the voucher are back on sale in Redis (clears sold-out flags on every API instance). */
  onUnitsBack?(voucherId: bigint): void;
}

/** What one observation finds beyond the counts (order ids, for comparing two sightings). */
interface Findings {
  lostEntries: InflightOrder[];
  unsettled: InflightOrder[];
  orphanEntries: InflightOrder[];
}

export function createReconciler(deps: ReconcilerDeps): Reconciler {
  const { db, redis, keys, scripts, directory, redisState, moves, releaseRelay: relay, releases, log } = deps;
  const dialect = dialectOf(db);
  const observe = (voucher: Voucher) => observeVoucher({ db, redis, keys, scripts }, voucher.id, segmentShards(voucher, keys));

  async function findings(o: Observation): Promise<Findings> {
    const notStored = o.redis.inflight.filter((x) => !o.stored.has(x.orderId));
    const entries = await Promise.all(notStored.map((x) => redis.xrange(keys.orders(x.shard), x.streamId, x.streamId)));
    const lostEntries = notStored.filter((_, i) => entries[i]!.length === 0);
    const unsettled = o.redis.inflight.filter((x) => o.stored.has(x.orderId) && Date.now() - x.createdAt.getTime() > SETTLE_GRACE_MS);

    const recorded = new Set(o.redis.inflight.map((x) => x.orderId));
    const candidates: InflightOrder[] = [];
    for (const { shard } of o.segments) {
      for (const raw of await unacknowledgedEntries(redis, keys.orders(shard), ENTRIES_SCANNED)) {
        const e = parseEntry(shard, raw, 1);
        if (isMalformed(e) || e.voucherId !== o.voucherId || recorded.has(e.orderId)) continue;
        candidates.push(inflightOfEntry(e));
      }
    }
    const storedIds = new Set<string>();
    for (let i = 0; i < candidates.length; i += IN_CHUNK) {
      const ids = candidates.slice(i, i + IN_CHUNK).map((c) => c.orderId);
      for (const r of await db.selectFrom('orders').select('id').where('id', 'in', ids).execute()) storedIds.add(r.id);
    }
    return { lostEntries, unsettled, orphanEntries: candidates.filter((c) => !storedIds.has(c.orderId)) };
  }

  /** Orders present in both sightings. */
  const both = (a: InflightOrder[], b: InflightOrder[]) => {
    const ids = new Set(b.map((x) => x.orderId));
    return a.filter((x) => ids.has(x.orderId));
  };

  async function finishLeftovers(voucher: Voucher, note: (d: Drift) => void) {
    const id = voucher.id.toString();
    const overdue = await db
      .selectFrom('orders')
      .select(sql<number>`count(*)`.as('n'))
      .where('voucher_id', '=', id)
      .where('status', '=', 'pending_payment')
      .where('expires_at', '<', dialect.nowPlusSeconds(-OVERDUE_GRACE_S))
      .executeTakeFirstOrThrow();
    if (Number(overdue.n) > 0) {
      const expired = await releases.expireDue({ limit: Number(overdue.n) * 2, voucherId: voucher.id });
      note({ kind: 'overdue_orders', detail: `${overdue.n} unpaid order(s) past their deadline; ${expired} expired now`, repaired: expired > 0 });
    }
    const stuck = await db
      .selectFrom('release_outbox')
      .select(sql<number>`count(*)`.as('n'))
      .where('voucher_id', '=', id)
      .where('created_at', '<', dialect.nowPlusSeconds(-OUTBOX_GRACE_S))
      .executeTakeFirstOrThrow();
    if (Number(stuck.n) > 0) {
      const relayed = await relay.drain();
      note({ kind: 'stuck_outbox', detail: `${stuck.n} release(s) not given back to Redis; relayed ${relayed}`, repaired: relayed > 0 });
    }
  }

  async function repairRedisState(voucher: Voucher, report: ReconcileReport, note: (d: Drift) => void) {
    // Without the group nothing reads the shard's stream: admitted orders would never be stored.
    for (const shard of segmentShards(voucher, keys)) {
      if (await hasConsumerGroup(redis, keys.orders(shard))) continue;
      const repaired = await ensureConsumerGroups(redis, keys, [shard]).then(() => true, () => false);
      note({ kind: 'consumer_group_missing', detail: `shard ${shard}: the order stream has no consumer group (Redis lost its data?); recreated`, repaired });
    }
    // A mover that died between lending and receiving: finish its move before counting.
    const finished = voucher.segmentShards ? await moves.finishStale(voucher, deps.staleMoveMs) : 0;
    if (finished) note({ kind: 'unfinished_move', detail: `${finished} move(s) of units between segments left half-way; finished`, repaired: true });
    const first = await observe(voucher);
    if (first.kind === 'not_found') return;
    if (first.kind === 'missing') {
      if (voucher.endAt.getTime() + RETAIN_AFTER_END_MS < Date.now()) return; // kept no longer: nothing to rebuild
      const rebuilt = await redisState.rewarm(voucher);
      note({ kind: 'state_missing', detail: 'voucher state missing from Redis; rebuilt from the database', repaired: rebuilt });
      return;
    }
    if (first.kind === 'busy') {
      report.verified = false;
      return;
    }
    const seen = await findings(first.observation);
    const counts = countDrift(first.observation);
    if (!counts && !seen.lostEntries.length && !seen.unsettled.length && !seen.orphanEntries.length) return;

    // Seen once: look again before touching anything.
    const second = await observe(voucher);
    if (second.kind !== 'observed') {
      report.verified = false;
      return;
    }
    const o = second.observation;
    const again = await findings(o);
    const countsAgain = countDrift(o);
    const orphans = both(again.orphanEntries, seen.orphanEntries);

    // Counts: corrected by the drift both sightings agree on, as offsets (traffic since the
    // observation is kept). Not while entries lack their record: their units are taken in Redis
    // without being visible, and "repairing" would hand them out twice. They are adopted below
    // and counted on the next run.
    const unmoved = first.observation.redis.gen === o.redis.gen && first.observation.redis.moves === o.redis.moves;
    if (counts && countsAgain && sameDrift(counts, countsAgain) && unmoved && orphans.length === 0) {
      const corrections = segmentCorrections(o, countsAgain, (user) => homeShard(voucher, user, keys));
      let done = true;
      for (const c of corrections) done = (await scripts.repair(voucher.id, c.shard, c.gen, c.correction)) && done;
      if (done && countsAgain.stock < 0) deps.onUnitsBack?.(voucher.id); // units back on sale
      if (countsAgain.stock) note({ kind: 'stock', detail: `Redis stock ${o.redis.stock}, database implies ${o.expected.stock}`, repaired: done });
      if (countsAgain.inflightCounter) {
        note({ kind: 'inflight_counter', detail: `in-flight counter ${o.redis.inflightCounter}, records ${o.expected.inflightCounter}`, repaired: done });
      }
      for (const [user, [have, want]] of countsAgain.buyers) note({ kind: 'buyer', detail: `user ${user}: Redis counts ${have}, database implies ${want}`, repaired: done });
    } else if (counts || countsAgain) {
      report.verified = false; // seen once only, or deferred: the next run looks again
    }

    for (const order of both(again.lostEntries, seen.lostEntries)) {
      note({ kind: 'lost_entry', detail: `order ${order.orderId} admitted but its stream entry is gone; requeued`, repaired: await scripts.requeue(order) });
    }
    for (const order of orphans) {
      note({ kind: 'lost_inflight_record', detail: `order ${order.orderId} in the stream without its in-flight record; restored`, repaired: await scripts.adopt(order) });
    }
    const unsettled = both(again.unsettled, seen.unsettled);
    for (const { shard } of o.segments) {
      const here = unsettled.filter((x) => x.shard === shard);
      if (!here.length) continue;
      const settled = await scripts.settle(
        CONSUMER_GROUP,
        shard,
        here.map((x) => settleInput({ ...x, voucherId: voucher.id }, settlementOfRow(o.stored.get(x.orderId)!))),
      );
      here.forEach((x, i) => note({ kind: 'unsettled_order', detail: `order ${x.orderId} stored but never settled in Redis; settled`, repaired: settled[i] ?? false }));
    }
  }

  async function reconcileVoucher(voucherId: bigint): Promise<ReconcileReport> {
    const voucher = await directory.get(voucherId);
    if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
    const report: ReconcileReport = { voucherId: voucherId.toString(), verified: true, drift: [], repaired: 0 };
    const note = (d: Drift) => {
      report.drift.push(d);
      if (!d.repaired) return;
      report.repaired += 1;
      deps.onRepair?.(d.kind);
      log.warn({ voucherId: report.voucherId, kind: d.kind, detail: d.detail }, 'reconciliation repaired drift');
    };
    // One reconciliation of a voucher at a time (scheduled runs, on-demand runs): repairs are offsets.
    const mutex = new Mutex(redis, keys.reconcileLock(voucherId), {
      lockTimeout: 30_000,
      acquireAttemptsLimit: 1,
      onLockLost: (err) => log.warn({ err, voucherId: report.voucherId }, 'reconciliation lock lost'),
    });
    if (!(await mutex.tryAcquire())) return { ...report, verified: false };
    try {
      await finishLeftovers(voucher, note);
      if (kindOf(voucher).redisGated) await repairRedisState(voucher, report, note);
      // Kept for the console (whichever instance ran it); a week, like the voucher's other keys.
      const kept = JSON.stringify({ ...report, at: new Date().toISOString() });
      await redis.set(keys.lastReconcile(voucherId), kept, 'EX', LAST_REPORT_KEPT_S).catch(() => undefined);
      return report;
    } finally {
      await mutex.release().catch(() => undefined);
    }
  }

  return {
    reconcileVoucher,
    async reconcileAll() {
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
      const reports: ReconcileReport[] = [];
      for (const { id } of rows) {
        try {
          reports.push(await reconcileVoucher(BigInt(id)));
        } catch (err) {
          log.warn({ err, voucherId: id }, 'reconciliation of a voucher failed; next run retries');
        }
      }
      return reports;
    },
  };
}

/**
 * The repair of each segment: a buyer's count in their home segment, each segment's in-flight
 * counter against its own records, and the stock where it fits (units given to the voucher's own
 * segment; units taken from the fullest first).
 */
function segmentCorrections(o: Observation, drift: CountDrift, home: (user: string) => number): { shard: number; gen: string; correction: Correction }[] {
  const bySegment = new Map(o.segments.map(({ shard, state }) => [shard, { shard, gen: state.gen, correction: { stock: 0, inflightCounter: 0, buyers: new Map<string, number>() } }]));
  const segment = (shard: number) => bySegment.get(shard)!;
  if (drift.stock > 0) {
    // Taken where the units are, fullest segment first, so no segment goes below 0 if avoidable.
    let excess = drift.stock;
    for (const { shard, state } of [...o.segments].sort((a, b) => b.state.stock - a.state.stock)) {
      const take = Math.min(excess, Math.max(0, state.stock));
      segment(shard).correction.stock = -take;
      excess -= take;
    }
    if (excess > 0) segment(o.segments[0]!.shard).correction.stock -= excess;
  } else if (drift.stock < 0) {
    segment(o.segments[0]!.shard).correction.stock = -drift.stock;
  }
  for (const { shard, state } of o.segments) segment(shard).correction.inflightCounter = state.inflight.length - state.inflightCounter;
  for (const [user, [have, want]] of drift.buyers) segment(home(user)).correction.buyers.set(user, want - have);
  return [...bySegment.values()].filter(({ correction: c }) => c.stock || c.inflightCounter || c.buyers.size);
}

/** Two sightings found the same drift (the same offsets, for the same users). */
function sameDrift(a: CountDrift, b: CountDrift): boolean {
  if (a.stock !== b.stock || a.inflightCounter !== b.inflightCounter || a.buyers.size !== b.buyers.size) return false;
  for (const [user, [have, want]] of a.buyers) {
    const other = b.buyers.get(user);
    if (!other || other[1] - other[0] !== want - have) return false;
  }
  return true;
}
