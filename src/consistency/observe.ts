// One consistent look at a voucher in both stores, and what Redis should hold according to the
// database. Used by reconciliation (to repair) and by the audit (to judge I4 on a live system).
//
// The database is read in one snapshot; inside it, Redis is read in one atomic script (stock,
// buyers, applied releases, in-flight records); then the voucher's `version` is read again outside
// the snapshot. Every transaction that changes a voucher's stock bumps `version`, so an unchanged
// version means the database did not move between its snapshot and the Redis read: the two
// describe the same moment, and the comparison is exact, with no tolerance for "work in flight".
// (Orders stored but not yet settled are in the snapshot and still in flight in Redis; releases
// not yet given back are outbox rows without a mark in Redis; both are accounted for.)
//
// A voucher of several segments is read one segment at a time (each atomically; on a cluster they
// are on different masters), then each segment's moves counter again: admissions and settlements
// stay inside one segment, so only a move between two reads could make the sum wrong, and any
// move step bumps the counter of the segment it touched. Units lent and not yet received count
// once, with the lender.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../infra/db/database.js';
import { compensationOf, settlementOfRow } from '../pipeline/settlement.js';
import type { InflightOrder } from '../infra/redis/records.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { ReconcileScripts, RedisState } from '../infra/redis/scripts/reconcile.js';

const ATTEMPTS = 20;
const PAUSE_MS = 10;
/** Order ids per `IN (...)` list: statements stay far below PostgreSQL's 65,535 parameters. */
export const IN_CHUNK = 1000;

export interface Expected {
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
}

export interface Observation {
  voucherId: bigint;
  dbStock: number;
  /** Every segment's state summed (stock with the units lent and not received yet). */
  redis: RedisState;
  /** Each segment's own state, by shard. */
  segments: { shard: number; state: RedisState }[];
  /** In-flight orders the database already has (committed; their settlement is pending). */
  stored: Map<string, { status: string; failureReason: string | null }>;
  /** What Redis should hold now. */
  expected: Expected;
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

/** The segments of one voucher as one state: sums and unions, lent units counted once. */
export function combineSegments(segments: { shard: number; state: RedisState }[]): RedisState {
  if (segments.length === 1) return segments[0]!.state;
  const received = new Map(segments.map(({ shard, state }) => [shard, state.received]));
  const buyers = new Map<string, number>();
  let stock = 0;
  let inflightCounter = 0;
  for (const { state } of segments) {
    stock += state.stock + state.lent.filter((m) => !received.get(m.toShard)?.has(m.moveId)).reduce((n, m) => n + m.units, 0);
    inflightCounter += state.inflightCounter;
    for (const [user, units] of state.buyers) buyers.set(user, (buyers.get(user) ?? 0) + units);
  }
  return {
    builtAt: segments.map(({ state }) => state.builtAt).join(','),
    stock,
    inflightCounter,
    buyers,
    released: new Set(segments.flatMap(({ state }) => [...state.released])),
    inflight: segments.flatMap(({ state }) => state.inflight),
    lent: segments.flatMap(({ state }) => state.lent),
    received: new Set(segments.flatMap(({ state }) => [...state.received])),
    moves: segments.reduce((n, { state }) => n + state.moves, 0),
  };
}

interface DbSide {
  version: string;
  stock: number;
  quantities: Map<string, number>;
  outbox: { order_id: string; user_id: string; quantity: number }[];
  stored: Observation['stored'];
}

/**
 * Redis should hold: the database's stock and quantities, minus what in-flight orders hold
 * (not stored yet, or stored as failed and not yet compensated), and without the releases Redis
 * has not been given yet.
 */
function expectedState(d: DbSide, redis: RedisState): Expected {
  let stock = d.stock;
  const buyers = new Map(d.quantities);
  const hold = (user: string, units: number) => buyers.set(user, (buyers.get(user) ?? 0) + units);
  for (const o of redis.inflight) {
    const row = d.stored.get(o.orderId);
    const settlement = row && settlementOfRow(row);
    if (settlement?.kind === 'stored') continue; // the database has it already
    hold(o.userId, o.quantity);
    // Not stored yet, or failed and its compensation (settlement.ts) still to come.
    if (!settlement || compensationOf(settlement).restoreStock) stock -= o.quantity;
  }
  for (const row of d.outbox) {
    if (redis.released.has(row.order_id)) continue;
    stock -= row.quantity;
    hold(row.user_id, row.quantity);
  }
  for (const [user, units] of buyers) if (units === 0) buyers.delete(user);
  return { stock, inflightCounter: redis.inflight.length, buyers };
}

type Attempt = { kind: 'done'; result: Observed } | { kind: 'moved' };

async function attempt({ db, redis, keys, scripts }: ObserveDeps, voucherId: bigint, shards: number[]): Promise<Attempt> {
  const id = voucherId.toString();
  const read = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const voucher = await trx.selectFrom('vouchers').select(['stock', 'version']).where('id', '=', id).executeTakeFirst();
      if (!voucher) return { kind: 'not_found' as const };
      const quantities = await trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', id).where('quantity', '>', 0).execute();
      const outbox = await trx.selectFrom('release_outbox').select(['order_id', 'user_id', 'quantity']).where('voucher_id', '=', id).execute();
      const states = await Promise.all(shards.map((shard) => scripts.inspect(voucherId, shard)));
      if (states.includes(null)) return { kind: 'missing' as const };
      const segments = states.map((state, i) => ({ shard: shards[i]!, state: state! }));
      const redisState = combineSegments(segments);
      const stored: Observation['stored'] = new Map();
      const ids = redisState.inflight.map((o) => o.orderId);
      for (let i = 0; i < ids.length; i += IN_CHUNK) {
        const rows = await trx.selectFrom('orders').select(['id', 'status', 'failure_reason']).where('id', 'in', ids.slice(i, i + IN_CHUNK)).execute();
        for (const r of rows) stored.set(r.id, { status: r.status, failureReason: r.failure_reason });
      }
      const side: DbSide = { version: voucher.version, stock: voucher.stock, quantities: new Map(quantities.map((q) => [q.user_id, q.quantity])), outbox, stored };
      return { kind: 'read' as const, side, redis: redisState, segments };
    });
  if (read.kind !== 'read') return { kind: 'done', result: { kind: read.kind } };
  // Outside the snapshot: has a transaction changed the voucher since? Then Redis may be ahead.
  const now = await db.selectFrom('vouchers').select('version').where('id', '=', id).executeTakeFirst();
  if (now?.version !== read.side.version) return { kind: 'moved' };
  if (shards.length > 1) {
    const moves = await Promise.all(shards.map((shard) => redis.hget(keys.voucher(voucherId, shard), 'moves')));
    if (moves.some((m, i) => Number(m ?? 0) !== read.segments[i]!.state.moves)) return { kind: 'moved' };
  }
  const observation = {
    voucherId,
    dbStock: read.side.stock,
    redis: read.redis,
    segments: read.segments,
    stored: read.side.stored,
    expected: expectedState(read.side, read.redis),
  };
  return { kind: 'done', result: { kind: 'observed', observation } };
}

/** `shards`: the voucher's segments (segments.ts); its own shard when absent. */
export async function observeVoucher(deps: ObserveDeps, voucherId: bigint, shards = [deps.keys.shardOf(voucherId)]): Promise<Observed> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const a = await attempt(deps, voucherId, shards);
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
  const buyers = new Map<string, [number, number]>();
  for (const user of new Set([...o.redis.buyers.keys(), ...o.expected.buyers.keys()])) {
    const have = o.redis.buyers.get(user) ?? 0;
    const want = o.expected.buyers.get(user) ?? 0;
    if (have !== want) buyers.set(user, [have, want]);
  }
  const stock = o.redis.stock - o.expected.stock;
  const inflightCounter = o.redis.inflightCounter - o.expected.inflightCounter;
  return stock || inflightCounter || buyers.size ? { stock, inflightCounter, buyers } : null;
}
