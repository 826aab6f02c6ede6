// One consistent look at a voucher in both stores, and what Redis should hold according to the
// database. Used by reconciliation (to repair) and by the audit (to judge I4 on a live system).
//
// The database is read in one snapshot. Inside it, each Redis segment is read as a window
// (segment-window.ts): it counts only when nothing but admissions happened in it, else the
// observation is tried again. Then the database's side of what the windows saw is read in the
// same snapshot: what Redis should hold (expected-state.ts) and the buyers' quantities
// (buyer-drift.ts).
//
// Then the voucher's `version` is read again outside the snapshot. Every transaction that changes
// a voucher's stock bumps it, so an unchanged version means the database did not move between its
// snapshot and the Redis windows: the two describe the same moment, and the comparison is exact,
// with no tolerance for "work in flight". The version is also read during long walks, to give up
// early on a database that is moving (a big voucher on sale).
//
// A voucher of several segments is read one segment at a time (on a cluster they are on different
// masters), then each segment's moves counter again: admissions and settlements stay inside one
// segment, so only a move between two reads could make the sum wrong, and any move step bumps the
// counter of the segment it touched.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Transaction } from 'kysely';
import type { Db } from '../infra/db/database.js';
import type { Database } from '../infra/db/types.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { unmovedSince } from '../infra/redis/scripts/moves.js';
import type { ReconcileScripts } from '../infra/redis/scripts/reconcile.js';
import { createInflightReader } from '../orders/inflight.js';
import { buyerDrift } from './buyer-drift.js';
import { expectedState, type StoredOrders } from './expected-state.js';
import { inChunks } from './in-chunks.js';
import { ALL_BUYERS, type BuyerScope, combine, type CombinedState, type SegmentState, unitsInTransit, type Walked, type Walker, walkSegment } from './segment-window.js';

const ATTEMPTS = 20;
const PAUSE_MS = 10;

export interface Observation {
  voucherId: bigint;
  dbStock: number;
  redis: CombinedState;
  /** Each segment's own state, by shard. */
  segments: { shard: number; state: SegmentState }[];
  /** In-flight orders the database already has (committed; their settlement is pending). */
  stored: StoredOrders;
  /** What Redis should hold now. */
  expected: { stock: number; inflightCounter: number };
  /**
   * user -> [Redis, expected] where they differ, among the buyers in scope. Buyers admitted while
   * their segment was walked are not compared (their count moved during the walk).
   */
  buyers: Map<string, [number, number]>;
  /** How many buyers were compared. */
  buyersCompared: number;
}

export type Observed =
  | { kind: 'observed'; observation: Observation }
  /** The voucher has no Redis state (rebuild it). */
  | { kind: 'missing' }
  /** The database kept changing the voucher while Redis was read: try again later. */
  | { kind: 'busy' }
  | { kind: 'not_found' };

export interface ObserveDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<ReconcileScripts, 'inspect'>;
}

/** `changed`: one of the stores changed while they were read: try again. */
type Attempt = { kind: 'done'; result: Observed } | { kind: 'changed' };
/** What the snapshot and the windows saw: the observation but for its segments' shards. */
type SnapshotRead = { kind: 'read'; seen: Omit<Observation, 'voucherId' | 'segments'>; segments: SegmentState[] } | { kind: 'not_found' | 'missing' | 'changed' };

/** The segments' windows, one after another; the first that is not walked ends the walk. */
async function walkSegments(w: Walker, voucherId: bigint, shards: number[], outboxIds: string[]) {
  const walked: Walked[] = [];
  for (const shard of shards) {
    const result = await walkSegment(w, voucherId, shard, outboxIds);
    if (result.kind !== 'walked') return result;
    walked.push(result.walked);
  }
  return { kind: 'walked' as const, walked };
}

/** Which of the in-flight orders the database already has, by primary key. */
async function storedAmong(trx: Transaction<Database>, ids: string[]): Promise<StoredOrders> {
  const stored: StoredOrders = new Map();
  for (const chunk of inChunks(ids)) {
    const rows = await trx.selectFrom('orders').select(['id', 'status', 'failure_reason']).where('id', 'in', chunk).execute();
    for (const r of rows) stored.set(r.id, { status: r.status, failureReason: r.failure_reason });
  }
  return stored;
}

/** Inside the snapshot: the segments' windows, then the database's side of what they saw. */
async function readSnapshot(trx: Transaction<Database>, { db, redis, keys, scripts }: ObserveDeps, voucherId: bigint, shards: number[], scope: BuyerScope): Promise<SnapshotRead> {
  const id = voucherId.toString();
  const voucher = await trx.selectFrom('vouchers').select(['stock', 'version']).where('id', '=', id).executeTakeFirst();
  if (!voucher) return { kind: 'not_found' };
  const outbox = await trx.selectFrom('release_outbox').select(['order_id', 'user_id', 'quantity']).where('voucher_id', '=', id).execute();
  const versionNow = async () => (await db.selectFrom('vouchers').select('version').where('id', '=', id).executeTakeFirst())?.version;
  // Outside the snapshot: has a transaction changed the voucher since? Then Redis may be ahead.
  const unchanged = async () => (await versionNow()) === voucher.version;
  const walker: Walker = { redis, keys, scripts, inflight: createInflightReader(redis, keys), scope, unchanged };
  const windows = await walkSegments(walker, voucherId, shards, outbox.map((r) => r.order_id));
  if (windows.kind !== 'walked') return windows;
  const { walked } = windows;
  const segments = walked.map((w) => w.state);
  const redisState = combine(segments, shards.length > 1 ? await unitsInTransit(walker, voucherId, segments) : 0);
  if (!(await unchanged())) return { kind: 'changed' };

  const stored = await storedAmong(trx, redisState.inflight.map((o) => o.orderId));
  const released = new Set(walked.flatMap((w) => [...w.released]));
  const { expected, extra } = expectedState({ stock: voucher.stock, outbox, stored }, redisState, released);
  const buyers = await buyerDrift(trx, id, scope, walked, extra);
  const seen = { dbStock: voucher.stock, redis: redisState, stored, expected, buyers: buyers.drift, buyersCompared: buyers.compared };
  return { kind: 'read', seen, segments };
}

async function attempt(deps: ObserveDeps, voucherId: bigint, shards: number[], scope: BuyerScope): Promise<Attempt> {
  const read = await deps.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute((trx) => readSnapshot(trx, deps, voucherId, shards, scope));
  if (read.kind === 'changed') return { kind: 'changed' };
  if (read.kind !== 'read') return { kind: 'done', result: { kind: read.kind } };
  const { seen, segments } = read;
  if (shards.length > 1 && !(await unmovedSince(deps.redis, deps.keys, voucherId, shards, segments.map((s) => s.moves)))) return { kind: 'changed' };
  const observation: Observation = { voucherId, ...seen, segments: segments.map((state, i) => ({ shard: shards[i]!, state })) };
  return { kind: 'done', result: { kind: 'observed', observation } };
}

/** `shards`: the voucher's segments (segments.ts); its own shard when absent. */
export async function observeVoucher(deps: ObserveDeps, voucherId: bigint, shards = [deps.keys.shardOf(voucherId)], scope = ALL_BUYERS): Promise<Observed> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const a = await attempt(deps, voucherId, shards, scope);
    if (a.kind === 'done') return a.result;
    await sleep(PAUSE_MS);
  }
  return { kind: 'busy' };
}

export interface CountDrift {
  /** Redis minus expected. */
  stock: number;
  inflightCounter: number;
  /** user -> [Redis, expected], only where they differ */
  buyers: Map<string, [number, number]>;
}

/** Where Redis' counts differ from what the database implies; null when they agree. */
export function countDrift(o: Observation): CountDrift | null {
  const stock = o.redis.stock - o.expected.stock;
  const inflightCounter = o.redis.inflightCounter - o.expected.inflightCounter;
  return stock || inflightCounter || o.buyers.size ? { stock, inflightCounter, buyers: o.buyers } : null;
}
