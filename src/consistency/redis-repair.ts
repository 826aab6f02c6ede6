// The Redis half of reconciling one seckill voucher: missing state is rebuilt, and an exact
// observation of both stores (observe.ts) is compared: stock, in-flight count and buyer counts,
// in-flight records whose stream entry is gone (requeued: the buyer holds a 202), unacknowledged
// entries whose record is gone (adopted), and records of orders stored long ago (settled). Nothing
// is repaired on one sighting: a second observation must show the same drift, and count repairs
// are offsets applied only to the state observed (its builtAt), so a repair keeps the traffic
// since the observation and never lands on a state rebuilt meanwhile. Every Redis call here is
// bounded (walks in steps, repairs and settlements in calls of a bounded size).
// Repairs only ever set Redis to what the database implies, so Redis never grants a unit the
// database cannot fulfil. Buyer counts are compared all at once or a slice per pass
// (buyer-slices.ts); both sightings of a pass compare the same buyers. A voucher unchanged since
// a whole comparison found it clean is not compared again for a while (UNCHANGED_COMPARED_EVERY_MS).
import type { Db } from '../infra/db/database.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { InflightOrder } from '../infra/redis/records.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { Correction } from '../infra/redis/scripts/reconcile.js';
import { createInflightReader } from '../orders/inflight.js';
import { CONSUMER_GROUP, ensureConsumerGroups, hasConsumerGroup } from '../pipeline/maintenance.js';
import { settleInput, settlementOfRow } from '../pipeline/settlement.js';
import { RETAIN_AFTER_END_MS, type VoucherRedisState } from '../vouchers/redis-state.js';
import type { SegmentMoves } from '../vouchers/segment-moves.js';
import { homeShard, segmentShards } from '../vouchers/segments.js';
import type { Voucher } from '../vouchers/voucher.js';
import type { BuyerSlices } from './buyer-slices.js';
import { inChunks } from './in-chunks.js';
import { type CountDrift, countDrift, type Observation, observeVoucher } from './observe.js';
import { ALL_BUYERS, type BuyerScope } from './segment-window.js';
import type { Drift } from './drift.js';

/** An order stored this long ago whose in-flight record is still there lost its settlement. */
const SETTLE_GRACE_MS = 5_000;
/** Stream entries looked at per shard for records that are gone (pending ones, and as many not delivered). */
const ENTRIES_SCANNED = 10_000;
/** Orders per settle call, as the pipeline's batches: the script's work stays small. */
const SETTLE_STEP = 500;
/** Buyer drifts reported one by one; the others in one line (a lost buyer hash is a million). */
const BUYERS_NOTED = 20;
/**
 * A voucher whose state has not moved since a comparison found it clean is compared again only
 * this often: a full comparison of a million buyers takes Redis a second of short steps and the
 * database a hundred page reads, and a kept voucher would be walked every pass for a week.
 */
const UNCHANGED_COMPARED_EVERY_MS = 10 * 60_000;

/** Per voucher, the mark of its state when a comparison last found it clean (one map per reconciler). */
export type CleanMarks = Map<bigint, { mark: string; at: number }>;

export interface RedisRepairDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  redisState: VoucherRedisState;
  moves: SegmentMoves;
  /**
   * A move between two segments lent this long ago lost its mover (segment-moves.ts): longer than
   * a live mover can take (each step is bounded by the Redis command timeout).
   */
  staleMoveMs: number;
  /** Units of the voucher are back on sale in Redis (clears sold-out flags on every API instance). */
  onUnitsBack?(voucherId: bigint): void;
}

type Note = (d: Drift) => void;

/** One observation and what it finds beyond the counts (order ids, for comparing two sightings). */
interface Sighting {
  observation: Observation;
  counts: CountDrift | null;
  lostEntries: InflightOrder[];
  unsettled: InflightOrder[];
  orphanEntries: InflightOrder[];
}

/** What a pass compared of the voucher's buyers. */
export interface BuyersCompared {
  compared: number;
  /** Every buyer of the voucher was compared (all at once, or a slice that held them all). */
  all: boolean;
}

export interface RepairOutcome {
  /** false when the comparison could not be made or a drift was seen once only: the next reconciliation looks again. */
  verified: boolean;
  buyers: BuyersCompared;
}

/**
 * Compares the voucher's Redis state with what the database implies and repairs what two
 * sightings agree on. `slices`: compare the next slice of buyers (null: all of them).
 */
export async function repairRedisState(deps: RedisRepairDeps, voucher: Voucher, note: Note, clean: CleanMarks, slices: BuyerSlices | null): Promise<RepairOutcome> {
  await restoreConsumerGroups(deps, voucher, note);
  await finishStaleMoves(deps, voucher, note);
  const none = (verified: boolean): RepairOutcome => ({ verified, buyers: { compared: 0, all: false } });
  const mark = await stateMark(deps, voucher);
  const last = clean.get(voucher.id);
  if (last?.mark === mark && Date.now() - last.at < UNCHANGED_COMPARED_EVERY_MS) return none(true);
  clean.delete(voucher.id);
  const shards = segmentShards(voucher, deps.keys);
  const slice = slices && (await slices.take(voucher.id, shards));
  const scope: BuyerScope = slice ? { kind: 'users', users: slice.users } : ALL_BUYERS;
  const observe = () => observeVoucher(deps, voucher.id, shards, scope);
  const first = await observe();
  if (first.kind === 'not_found') return none(true);
  if (first.kind === 'missing') {
    await rebuildState(deps, voucher, note);
    return none(true);
  }
  if (first.kind === 'busy') return none(false);
  const compared = (verified: boolean, cleanNow: boolean): RepairOutcome => {
    const lapClean = slice ? slices!.compared(voucher.id, slice, cleanNow) : cleanNow;
    if (lapClean) clean.set(voucher.id, { mark, at: Date.now() });
    return { verified, buyers: { compared: first.observation.buyersCompared, all: !slice || (slice.startsLap && slice.endsLap) } };
  };
  const seen = await sight(deps, first.observation);
  if (!seen.counts && !seen.lostEntries.length && !seen.unsettled.length && !seen.orphanEntries.length) return compared(true, true);

  // Seen once: look again before touching anything.
  const second = await observe();
  if (second.kind !== 'observed') return none(false);
  const again = await sight(deps, second.observation);
  const orphans = both(again.orphanEntries, seen.orphanEntries);

  const counts = agreedCounts(seen, again, orphans);
  if (counts && counts !== 'unconfirmed') await repairCounts(deps, voucher, again.observation, counts, note);
  await requeueLostEntries(deps, both(again.lostEntries, seen.lostEntries), note);
  await adoptOrphanEntries(deps, orphans, note);
  await settleStoredOrders(deps, voucher, again.observation, both(again.unsettled, seen.unsettled), note);
  return counts === 'unconfirmed' ? none(false) : compared(true, false);
}

/**
 * Changes with every change of the voucher's state: the database's version (every stock change),
 * and per segment its stock, in-flight counter, builtAt and moves (admissions, settlements,
 * releases, moves, rebuilds), its number of buyers, and the shard's number of in-flight records
 * and stream entries (a record or an entry lost). Read before the comparison it is kept for, so a
 * change during that comparison makes the next mark differ.
 */
async function stateMark({ db, redis, keys }: RedisRepairDeps, voucher: Voucher): Promise<string> {
  const row = await db.selectFrom('vouchers').select('version').where('id', '=', voucher.id.toString()).executeTakeFirst();
  const segments = await Promise.all(
    segmentShards(voucher, keys).map((s) =>
      Promise.all([
        redis.hmget(keys.voucher(voucher.id, s), 'stock', 'inflight', 'builtAt', 'moves'),
        redis.hlen(keys.buyers(voucher.id, s)),
        redis.hlen(keys.inflight(s)),
        redis.xlen(keys.orders(s)),
      ]),
    ),
  );
  return JSON.stringify([row?.version, segments]);
}

/** Without the group nothing reads the shard's stream: admitted orders would never be stored. */
async function restoreConsumerGroups({ redis, keys }: RedisRepairDeps, voucher: Voucher, note: Note) {
  for (const shard of segmentShards(voucher, keys)) {
    if (await hasConsumerGroup(redis, keys.orders(shard))) continue;
    const repaired = await ensureConsumerGroups(redis, keys, [shard]).then(() => true, () => false);
    note({ kind: 'consumer_group_missing', detail: `shard ${shard}: the order stream has no consumer group (Redis lost its data?); recreated`, repaired });
  }
}

/** A mover that died between lending and receiving: its move is finished before counting. */
async function finishStaleMoves({ moves, staleMoveMs }: RedisRepairDeps, voucher: Voucher, note: Note) {
  const finished = voucher.segmentShards ? await moves.finishStale(voucher, staleMoveMs) : 0;
  if (finished) note({ kind: 'unfinished_move', detail: `${finished} move(s) of units between segments left half-way; finished`, repaired: true });
}

async function rebuildState({ redisState }: RedisRepairDeps, voucher: Voucher, note: Note) {
  if (voucher.endAt.getTime() + RETAIN_AFTER_END_MS < Date.now()) return; // kept no longer: nothing to rebuild
  const rebuilt = await redisState.rewarm(voucher);
  note({ kind: 'state_missing', detail: 'voucher state missing from Redis; rebuilt from the database', repaired: rebuilt });
}

async function sight({ db, redis, keys }: RedisRepairDeps, o: Observation): Promise<Sighting> {
  const inflight = createInflightReader(redis, keys);
  const unacknowledged: InflightOrder[] = [];
  for (const { shard } of o.segments) unacknowledged.push(...(await inflight.unacknowledged(o.voucherId, shard, CONSUMER_GROUP, ENTRIES_SCANNED)));

  // A record's entry is looked up one by one only when the scan did not meet it.
  const scanned = new Set(unacknowledged.map((e) => e.orderId));
  const unseen = o.redis.inflight.filter((x) => !o.stored.has(x.orderId) && !scanned.has(x.orderId));
  const entries = await Promise.all(unseen.map((x) => redis.xrange(keys.orders(x.shard), x.streamId, x.streamId)));
  const lostEntries = unseen.filter((_, i) => entries[i]!.length === 0);
  const unsettled = o.redis.inflight.filter((x) => o.stored.has(x.orderId) && Date.now() - x.createdAt.getTime() > SETTLE_GRACE_MS);

  const recorded = new Set(o.redis.inflight.map((x) => x.orderId));
  const candidates = unacknowledged.filter((e) => !recorded.has(e.orderId));
  const storedIds = new Set<string>();
  for (const ids of inChunks(candidates.map((c) => c.orderId))) {
    for (const r of await db.selectFrom('orders').select('id').where('id', 'in', ids).execute()) storedIds.add(r.id);
  }
  return { observation: o, counts: countDrift(o), lostEntries, unsettled, orphanEntries: candidates.filter((c) => !storedIds.has(c.orderId)) };
}

/** Orders present in both sightings. */
function both(a: InflightOrder[], b: InflightOrder[]): InflightOrder[] {
  const ids = new Set(b.map((x) => x.orderId));
  return a.filter((x) => ids.has(x.orderId));
}

/**
 * The count drift to repair: null when neither sighting saw one, 'unconfirmed' when they differ
 * or segments moved units between them. Also not while entries lack their record: their units
 * are taken in Redis without being visible, and "repairing" would hand them out twice. They are
 * adopted first and counted by the next reconciliation.
 */
function agreedCounts(first: Sighting, second: Sighting, orphans: InflightOrder[]): CountDrift | null | 'unconfirmed' {
  const { counts } = first;
  const { counts: countsAgain } = second;
  if (!counts && !countsAgain) return null;
  const unmoved = first.observation.redis.builtAt === second.observation.redis.builtAt && first.observation.redis.moves === second.observation.redis.moves;
  return counts && countsAgain && sameDrift(counts, countsAgain) && unmoved && orphans.length === 0 ? countsAgain : 'unconfirmed';
}

/** Stock, in-flight counters and buyer counts, corrected as offsets (traffic since the observation is kept). */
async function repairCounts({ keys, scripts, onUnitsBack }: RedisRepairDeps, voucher: Voucher, o: Observation, drift: CountDrift, note: Note) {
  const corrections = segmentCorrections(o, drift, (user) => homeShard(voucher, user, keys));
  let done = true;
  for (const c of corrections) done = (await scripts.repair(voucher.id, c.shard, c.builtAt, c.correction)) && done;
  if (done && drift.stock < 0) onUnitsBack?.(voucher.id); // units back on sale
  if (drift.stock) note({ kind: 'stock', detail: `Redis stock ${o.redis.stock}, database implies ${o.expected.stock}`, repaired: done });
  if (drift.inflightCounter) {
    note({ kind: 'inflight_counter', detail: `in-flight counter ${o.redis.inflightCounter}, records ${o.expected.inflightCounter}`, repaired: done });
  }
  let shown = 0;
  for (const [user, [have, want]] of drift.buyers) {
    if (shown++ === BUYERS_NOTED) break;
    note({ kind: 'buyer', detail: `user ${user}: Redis counts ${have}, database implies ${want}`, repaired: done });
  }
  const more = drift.buyers.size - BUYERS_NOTED;
  if (more > 0) note({ kind: 'buyer', detail: `${more} more buyers' counts differed from what the database implies`, repaired: done });
}

async function requeueLostEntries({ scripts }: RedisRepairDeps, lost: InflightOrder[], note: Note) {
  for (const order of lost) {
    note({ kind: 'lost_entry', detail: `order ${order.orderId} admitted but its stream entry is gone; requeued`, repaired: await scripts.redeliver(order) });
  }
}

async function adoptOrphanEntries({ scripts }: RedisRepairDeps, orphans: InflightOrder[], note: Note) {
  for (const order of orphans) {
    note({ kind: 'lost_inflight_record', detail: `order ${order.orderId} in the stream without its in-flight record; restored`, repaired: await scripts.adopt(order) });
  }
}

/** Orders stored long ago whose settlement never reached Redis: settled per segment as the pipeline would. */
async function settleStoredOrders({ scripts }: RedisRepairDeps, voucher: Voucher, o: Observation, unsettled: InflightOrder[], note: Note) {
  for (const { shard } of o.segments) {
    const here = unsettled.filter((x) => x.shard === shard);
    if (!here.length) continue;
    for (let i = 0; i < here.length; i += SETTLE_STEP) {
      const step = here.slice(i, i + SETTLE_STEP);
      const settled = await scripts.settle(
        CONSUMER_GROUP,
        shard,
        step.map((x) => settleInput({ ...x, voucherId: voucher.id }, settlementOfRow(o.stored.get(x.orderId)!))),
      );
      step.forEach((x, j) => note({ kind: 'unsettled_order', detail: `order ${x.orderId} stored but never settled in Redis; settled`, repaired: settled[j] ?? false }));
    }
  }
}

/**
 * The repair of each segment: a buyer's count in their home segment, each segment's in-flight
 * counter against its own records, and the stock where it fits (units given to the voucher's own
 * segment; units taken from the fullest first).
 */
function segmentCorrections(o: Observation, drift: CountDrift, home: (user: string) => number): { shard: number; builtAt: string; correction: Correction }[] {
  const bySegment = new Map(o.segments.map(({ shard, state }) => [shard, { shard, builtAt: state.builtAt, correction: { stock: 0, inflightCounter: 0, buyers: new Map<string, number>() } }]));
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
