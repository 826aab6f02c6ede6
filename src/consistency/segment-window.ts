// One Redis segment of a voucher read as a window, inside the database's snapshot (observe.ts): the
// fixed-size part of its state in one atomic step (inspect-3.lua: stock, in-flight counter,
// builtAt, moves, the last id its shard stream handed out), then what grows with the sale in steps
// of REDIS_STEP elements (in-flight records, buyer counts, releases applied), then the fixed part
// again. No step reads a whole buyer hash or in-flight hash: Redis runs one command at a time, and
// one that did would make every claim wait for it.
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
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { InflightOrder } from '../infra/redis/records.js';
import type { Lent, ReconcileScripts, SegmentHead } from '../infra/redis/scripts/reconcile.js';
import { cursorWalk, inSteps, pairsOf } from '../infra/redis/walk.js';
import type { InflightReader } from '../orders/inflight.js';

/** Walk steps between two looks at the database's version. */
const VERSION_EVERY_STEPS = 10;

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

/**
 * Which buyers' counts an observation compares: all of them (walked in HSCAN steps) or a slice
 * (buyer-slices.ts; their counts read with HMGET inside the same window).
 */
export type BuyerScope = { kind: 'all' } | { kind: 'users'; users: readonly string[] };
export const ALL_BUYERS: BuyerScope = { kind: 'all' };

/** What one segment's window saw; `buyers` and `released` are its walks' results. */
export interface Walked {
  state: SegmentState;
  buyers: Map<string, number>;
  released: Set<string>;
  /** Buyers admitted during the window. */
  admittedUsers: Set<string>;
}

/** `changed`: the window saw more than admissions (or the database changed): try again. */
export type WalkResult = { kind: 'walked'; walked: Walked } | { kind: 'missing' } | { kind: 'changed' };

export interface Walker {
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
  let steps = 0;
  for await (const { elements } of cursorWalk((cursor, count) => w.redis.hscan(key, cursor, 'COUNT', count))) {
    for (const [user, units] of pairsOf(elements)) buyers.set(user, Number(units));
    if (++steps % VERSION_EVERY_STEPS === 0 && !(await w.unchanged())) return null;
  }
  return buyers;
}

/** The counts of the slice's buyers who have one in this segment, in HMGET steps. */
async function countsOf(w: Walker, key: string, users: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const step of inSteps(users)) {
    (await w.redis.hmget(key, ...step)).forEach((n, j) => n !== null && counts.set(step[j]!, Number(n)));
  }
  return counts;
}

/** Which of `orderIds` the segment has given back (its released hash), in HMGET steps. */
async function releasedAmong(w: Walker, key: string, orderIds: string[]): Promise<Set<string>> {
  const released = new Set<string>();
  for (const ids of inSteps(orderIds)) {
    (await w.redis.hmget(key, ...ids)).forEach((mark, j) => mark !== null && released.add(ids[j]!));
  }
  return released;
}

/** One segment's window: its fixed part, its walks, its fixed part again (see the module comment). */
export async function walkSegment(w: Walker, voucherId: bigint, shard: number, outboxIds: string[]): Promise<WalkResult> {
  const { keys } = w;
  const start = await w.scripts.inspect(voucherId, shard);
  if (!start) return { kind: 'missing' };
  const records = await w.inflight.ofVoucher(voucherId, [shard]);
  const buyersKey = keys.buyers(voucherId, shard);
  const buyers = w.scope.kind === 'all' ? await walkBuyers(w, buyersKey) : await countsOf(w, buyersKey, w.scope.users);
  if (!buyers) return { kind: 'changed' };
  const released = await releasedAmong(w, keys.released(voucherId, shard), outboxIds);
  const end = await w.scripts.inspect(voucherId, shard);
  if (!end) return { kind: 'changed' }; // gone meanwhile: the next attempt finds it missing
  const admitted = await w.inflight.admittedBetween(voucherId, shard, start.lastStreamId, end.lastStreamId);
  if (!onlyAdmissions(start, end, admitted)) return { kind: 'changed' };
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

/**
 * Units lent by a segment and not received by the other yet (read inside the moves check): they
 * count once, with the lender.
 */
export async function unitsInTransit({ redis, keys }: Walker, voucherId: bigint, segments: SegmentState[]): Promise<number> {
  let units = 0;
  for (const lent of segments.flatMap((s) => s.lent)) {
    if (!(await redis.hexists(keys.movesIn(voucherId, lent.toShard), lent.moveId))) units += lent.units;
  }
  return units;
}

export function combine(segments: SegmentState[], inTransit: number): CombinedState {
  return {
    builtAt: segments.map((s) => s.builtAt).join(','),
    stock: segments.reduce((n, s) => n + s.stock, inTransit),
    inflightCounter: segments.reduce((n, s) => n + s.inflightCounter, 0),
    inflight: segments.flatMap((s) => s.inflight),
    moves: segments.reduce((n, s) => n + s.moves, 0),
  };
}
