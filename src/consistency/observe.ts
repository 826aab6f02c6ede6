// One consistent look at a voucher in both stores, and what Redis should hold according to the
// database. Used by reconciliation (to repair) and by the audit (to judge I4 on a live system).
//
// The database is read in one snapshot. Inside it, each Redis segment is read as a window: the
// fixed-size part of its state in one atomic step (inspect-3.lua: stock, in-flight counter,
// builtAt, moves, the last id its shard stream handed out), then what grows with the sale in steps
// of 250 elements (in-flight records, buyer counts, releases applied), then the fixed part again.
// No step reads a whole buyer hash or in-flight hash: Redis runs one command at a time, and one
// that did would make every claim wait for it.
//
// A walk in steps sees a moving target, so a window counts only when nothing but admissions
// happened in it. Admissions are seen exactly: each one appends to the shard stream, so the
// voucher's entries between the two stream ids are the admissions of the window, and each moved
// the stock by its quantity and the in-flight counter by one. A window whose end differs from
// its start by anything more (a settlement, a compensation, a release given back, a move, a
// rebuild) is thrown away, and the observation tried again. In a window of admissions only,
// nothing was removed, so the record walk returned every record that existed at the start (HSCAN
// returns what stays in the hash during the whole scan); the records of the window's admissions
// are left out, and the stock and counter of the start go with the rest. A
// buyer's count changed in the window only if they were admitted in it: those buyers are not
// compared this time (the next look compares them), every other count is the one of the start.
// Releases applied cannot change in such a window either.
//
// Then the voucher's `version` is read again outside the snapshot. Every transaction that changes
// a voucher's stock bumps it, so an unchanged version means the database did not move between its
// snapshot and the Redis windows: the two describe the same moment, and the comparison is exact,
// with no tolerance for "work in flight". (Orders stored but not yet settled are in the snapshot
// and still in flight in Redis; releases not yet given back are outbox rows without a mark in
// Redis; both are accounted for.) The version is also read during long walks, to give up early
// on a database that is moving (a big voucher on sale).
//
// The buyers compared are all of them (the audit, the verification after a master change) or a
// given slice of them (buyer-slices.ts: a scheduled reconciliation compares a bounded number per
// pass, so its cost does not grow with the voucher). A slice's counts are read with HMGET inside
// the same windows, and their database quantities by primary key inside the same snapshot.
//
// A voucher of several segments is read one segment at a time (on a cluster they are on different
// masters), then each segment's moves counter again: admissions and settlements stay inside one
// segment, so only a move between two reads could make the sum wrong, and any move step bumps the
// counter of the segment it touched. Units lent and not yet received count once, with the lender.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Transaction } from 'kysely';
import type { Db } from '../infra/db/database.js';
import type { Database } from '../infra/db/types.js';
import { compensationOf, settlementOfRow } from '../pipeline/settlement.js';
import type { InflightOrder } from '../infra/redis/records.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { RedisClient } from '../infra/redis/client.js';
import { unmovedSince } from '../infra/redis/scripts/moves.js';
import type { Lent, ReconcileScripts, SegmentHead } from '../infra/redis/scripts/reconcile.js';
import { createInflightReader, type InflightReader } from '../orders/inflight.js';

const ATTEMPTS = 20;
const PAUSE_MS = 10;
/** Order ids per `IN (...)` list: statements stay far below PostgreSQL's 65,535 parameters. */
export const IN_CHUNK = 1000;
/**
 * Elements per Redis command of a walk: an HSCAN step of 250 buyer counts costs Redis 0.26 ms, one
 * of 1,000 took 1.1 ms (1,000,000 buyers, 2-vCPU VM), for the same walk time.
 */
const STEP = 250;
/** Walk steps between two looks at the database's version. */
const VERSION_EVERY_STEPS = 10;
/** Quantity rows per query. */
const QUANTITY_PAGE = 10_000;

/** A segment's state at the start of its window. */
export interface SegmentState {
  builtAt: string;
  stock: number;
  inflightCounter: number;
  /** The segment's in-flight records, admitted before the window began. */
  inflight: InflightOrder[];
  lent: Lent[];
  moves: number;
}

/** Every segment summed: stock with the units lent and not received yet. */
export interface CombinedState {
  builtAt: string;
  stock: number;
  inflightCounter: number;
  inflight: InflightOrder[];
  moves: number;
}

/** Which buyers' counts an observation compares. */
export type BuyerScope = { kind: 'all' } | { kind: 'users'; users: readonly string[] };
export const ALL_BUYERS: BuyerScope = { kind: 'all' };

export interface Observation {
  voucherId: bigint;
  dbStock: number;
  redis: CombinedState;
  /** Each segment's own state, by shard. */
  segments: { shard: number; state: SegmentState }[];
  /** In-flight orders the database already has (committed; their settlement is pending). */
  stored: Map<string, { status: string; failureReason: string | null }>;
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

/** What one segment's window saw; `buyers` and `released` are its walks' results. */
interface Walked {
  state: SegmentState;
  buyers: Map<string, number>;
  released: Set<string>;
  /** Buyers admitted during the window. */
  admittedUsers: Set<string>;
}

type WalkResult = { kind: 'walked'; walked: Walked } | { kind: 'missing' } | { kind: 'moved' };

interface Walker {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<ReconcileScripts, 'inspect'>;
  inflight: InflightReader;
  scope: BuyerScope;
  /** The database has not moved since the snapshot. */
  unchanged(): Promise<boolean>;
}

/** The segment's buyer counts, in HSCAN steps; null when the database moved meanwhile. */
async function walkBuyers(w: Walker, key: string): Promise<Map<string, number> | null> {
  // HSCAN may return an element twice (while the hash is resized): a Map keeps it once.
  const buyers = new Map<string, number>();
  let cursor = '0';
  let steps = 0;
  do {
    const [next, flat] = await w.redis.hscan(key, cursor, 'COUNT', STEP);
    cursor = next;
    for (let i = 0; i + 1 < flat.length; i += 2) buyers.set(flat[i]!, Number(flat[i + 1]));
    if (++steps % VERSION_EVERY_STEPS === 0 && !(await w.unchanged())) return null;
  } while (cursor !== '0');
  return buyers;
}

/** The counts of the slice's buyers who have one in this segment, in HMGET steps. */
async function countsOf(w: Walker, key: string, users: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < users.length; i += STEP) {
    const step = users.slice(i, i + STEP);
    (await w.redis.hmget(key, ...step)).forEach((n, j) => n !== null && counts.set(step[j]!, Number(n)));
  }
  return counts;
}

/** Which of `orderIds` the segment has given back (its released hash), in HMGET steps. */
async function releasedAmong(w: Walker, key: string, orderIds: string[]): Promise<Set<string>> {
  const released = new Set<string>();
  for (let i = 0; i < orderIds.length; i += STEP) {
    const ids = orderIds.slice(i, i + STEP);
    (await w.redis.hmget(key, ...ids)).forEach((mark, j) => mark !== null && released.add(ids[j]!));
  }
  return released;
}

/** One segment's window: its fixed part, its walks, its fixed part again (see the module comment). */
async function walkSegment(w: Walker, voucherId: bigint, shard: number, outboxIds: string[]): Promise<WalkResult> {
  const { keys } = w;
  const start = await w.scripts.inspect(voucherId, shard);
  if (!start) return { kind: 'missing' };
  const records = await w.inflight.ofVoucher(voucherId, [shard]);
  const buyers = w.scope.kind === 'all' ? await walkBuyers(w, keys.buyers(voucherId, shard)) : await countsOf(w, keys.buyers(voucherId, shard), w.scope.users);
  if (!buyers) return { kind: 'moved' };
  const released = await releasedAmong(w, keys.released(voucherId, shard), outboxIds);
  const end = await w.scripts.inspect(voucherId, shard);
  if (!end) return { kind: 'moved' }; // gone meanwhile: the next attempt finds it missing
  const admitted = await w.inflight.admittedBetween(voucherId, shard, start.lastStreamId, end.lastStreamId);
  if (!onlyAdmissions(start, end, admitted)) return { kind: 'moved' };
  const admittedNow = new Set(admitted.map((a) => a.orderId));
  const state: SegmentState = {
    builtAt: start.builtAt,
    stock: start.stock,
    inflightCounter: start.inflightCounter,
    inflight: records.filter((r) => !admittedNow.has(r.orderId)),
    lent: start.lent,
    moves: start.moves,
  };
  return { kind: 'walked', walked: { state, buyers, released, admittedUsers: new Set(admitted.map((a) => a.userId)) } };
}

/** Between `start` and `end` the segment changed by `admitted` and nothing else. */
function onlyAdmissions(start: SegmentHead, end: SegmentHead, admitted: { quantity: number }[]): boolean {
  const units = admitted.reduce((n, a) => n + a.quantity, 0);
  return (
    end.builtAt === start.builtAt &&
    end.moves === start.moves &&
    end.inflightCounter === start.inflightCounter + admitted.length &&
    end.stock === start.stock - units
  );
}

/** Units lent by a segment and not received by the other yet (read inside the moves check). */
async function unitsInTransit({ redis, keys }: Walker, voucherId: bigint, segments: SegmentState[]): Promise<number> {
  let units = 0;
  for (const lent of segments.flatMap((s) => s.lent)) {
    if (!(await redis.hexists(keys.movesIn(voucherId, lent.toShard), lent.moveId))) units += lent.units;
  }
  return units;
}

function combine(segments: SegmentState[], inTransit: number): CombinedState {
  return {
    builtAt: segments.map((s) => s.builtAt).join(','),
    stock: segments.reduce((n, s) => n + s.stock, inTransit),
    inflightCounter: segments.reduce((n, s) => n + s.inflightCounter, 0),
    inflight: segments.flatMap((s) => s.inflight),
    moves: segments.reduce((n, s) => n + s.moves, 0),
  };
}

interface DbSide {
  stock: number;
  outbox: { order_id: string; user_id: string; quantity: number }[];
  stored: Observation['stored'];
}

/**
 * What Redis should hold beyond the database's quantities: its stock minus what in-flight orders
 * hold (not stored yet, or stored as failed and not yet compensated), without the releases Redis
 * has not been given yet; and per buyer, the units those orders and releases add to their
 * database quantity.
 */
function expectedState(d: DbSide, redis: CombinedState, released: Set<string>) {
  let stock = d.stock;
  const extra = new Map<string, number>();
  const hold = (user: string, units: number) => extra.set(user, (extra.get(user) ?? 0) + units);
  for (const o of redis.inflight) {
    const row = d.stored.get(o.orderId);
    const settlement = row && settlementOfRow(row);
    if (settlement?.kind === 'stored') continue; // the database has it already
    hold(o.userId, o.quantity);
    // Not stored yet, or failed and its compensation (settlement.ts) still to come.
    if (!settlement || compensationOf(settlement).restoreStock) stock -= o.quantity;
  }
  for (const row of d.outbox) {
    if (released.has(row.order_id)) continue;
    stock -= row.quantity;
    hold(row.user_id, row.quantity);
  }
  return { expected: { stock, inflightCounter: redis.inflight.length }, extra };
}

type Compare = (user: string, want: number) => void;

/** A comparer of `counts` (each compared buyer taken out of it) that collects the drift. */
function comparer(counts: Map<string, number>, notCompared: Set<string>) {
  const result = { drift: new Map<string, [number, number]>(), compared: 0 };
  const compare: Compare = (user, want) => {
    const have = counts.get(user) ?? 0;
    counts.delete(user);
    if (notCompared.has(user)) return;
    result.compared += 1;
    if (have !== want) result.drift.set(user, [have, want]);
  };
  return { compare, result };
}

/** The slice's counts against its buyers' database quantities plus `extra` (by primary key, in the snapshot). */
async function sliceDrift(trx: Transaction<Database>, voucherId: string, users: readonly string[], counts: Map<string, number>, extra: Map<string, number>, notCompared: Set<string>) {
  const { compare, result } = comparer(counts, notCompared);
  const quantities = new Map<string, number>();
  for (let i = 0; i < users.length; i += IN_CHUNK) {
    const rows = await trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).where('user_id', 'in', users.slice(i, i + IN_CHUNK)).execute();
    for (const r of rows) quantities.set(r.user_id, r.quantity);
  }
  for (const user of users) compare(user, (quantities.get(user) ?? 0) + (extra.get(user) ?? 0));
  return result;
}

/**
 * Compares the walked counts (`counts`, emptied on the way) with the database's quantities plus
 * `extra`, page by page of the snapshot, so only one side is ever held whole.
 */
async function buyerDrift(trx: Transaction<Database>, voucherId: string, counts: Map<string, number>, extra: Map<string, number>, notCompared: Set<string>) {
  const { compare, result } = comparer(counts, notCompared);
  const left = new Map(extra);
  let after: string | null = null;
  for (;;) {
    let page = trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).where('quantity', '>', 0);
    if (after !== null) page = page.where('user_id', '>', after);
    const rows = await page.orderBy('user_id').limit(QUANTITY_PAGE).execute();
    for (const r of rows) {
      compare(r.user_id, r.quantity + (left.get(r.user_id) ?? 0));
      left.delete(r.user_id);
    }
    if (rows.length < QUANTITY_PAGE) break;
    after = rows[rows.length - 1]!.user_id;
  }
  for (const [user, units] of left) compare(user, units);
  for (const user of counts.keys()) compare(user, 0);
  return result;
}

/** Sums the segments' walked counts (a buyer normally has one segment: their home). */
function mergeCounts(walked: Walked[]): Map<string, number> {
  if (walked.length === 1) return walked[0]!.buyers;
  const all = new Map<string, number>();
  for (const { buyers } of walked) for (const [user, units] of buyers) all.set(user, (all.get(user) ?? 0) + units);
  return all;
}

type Attempt = { kind: 'done'; result: Observed } | { kind: 'moved' };

async function attempt({ db, redis, keys, scripts }: ObserveDeps, voucherId: bigint, shards: number[], scope: BuyerScope): Promise<Attempt> {
  const id = voucherId.toString();
  const versionNow = async () => (await db.selectFrom('vouchers').select('version').where('id', '=', id).executeTakeFirst())?.version;
  const read = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const voucher = await trx.selectFrom('vouchers').select(['stock', 'version']).where('id', '=', id).executeTakeFirst();
      if (!voucher) return { kind: 'not_found' as const };
      const outbox = await trx.selectFrom('release_outbox').select(['order_id', 'user_id', 'quantity']).where('voucher_id', '=', id).execute();
      // Outside the snapshot: has a transaction changed the voucher since? Then Redis may be ahead.
      const unchanged = async () => (await versionNow()) === voucher.version;
      const walker: Walker = { redis, keys, scripts, inflight: createInflightReader(redis, keys), scope, unchanged };
      const walked: Walked[] = [];
      for (const shard of shards) {
        const w = await walkSegment(walker, voucherId, shard, outbox.map((r) => r.order_id));
        if (w.kind !== 'walked') return w;
        walked.push(w.walked);
      }
      const segments = walked.map((w) => w.state);
      const redisState = combine(segments, shards.length > 1 ? await unitsInTransit(walker, voucherId, segments) : 0);
      if (!(await unchanged())) return { kind: 'moved' as const };

      const stored: Observation['stored'] = new Map();
      const ids = redisState.inflight.map((o) => o.orderId);
      for (let i = 0; i < ids.length; i += IN_CHUNK) {
        const rows = await trx.selectFrom('orders').select(['id', 'status', 'failure_reason']).where('id', 'in', ids.slice(i, i + IN_CHUNK)).execute();
        for (const r of rows) stored.set(r.id, { status: r.status, failureReason: r.failure_reason });
      }
      const side: DbSide = { stock: voucher.stock, outbox, stored };
      const released = new Set(walked.flatMap((w) => [...w.released]));
      const { expected, extra } = expectedState(side, redisState, released);
      const notCompared = new Set(walked.flatMap((w) => [...w.admittedUsers]));
      const counts = mergeCounts(walked);
      const buyers = scope.kind === 'all' ? await buyerDrift(trx, id, counts, extra, notCompared) : await sliceDrift(trx, id, scope.users, counts, extra, notCompared);
      return { kind: 'read' as const, side, redis: redisState, segments, expected, buyers: buyers.drift, buyersCompared: buyers.compared };
    });
  if (read.kind === 'moved') return read;
  if (read.kind !== 'read') return { kind: 'done', result: { kind: read.kind } };
  if (shards.length > 1 && !(await unmovedSince(redis, keys, voucherId, shards, read.segments.map((s) => s.moves)))) return { kind: 'moved' };
  const observation: Observation = {
    voucherId,
    dbStock: read.side.stock,
    redis: read.redis,
    segments: read.segments.map((state, i) => ({ shard: shards[i]!, state })),
    stored: read.side.stored,
    expected: read.expected,
    buyers: read.buyers,
    buyersCompared: read.buyersCompared,
  };
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
