// The invariants of docs/design.md ("Invariants") for one voucher, evaluated against both stores. On a live system
// (`seckill audit`) Redis is compared with what the database implies once in-flight orders and
// pending releases are accounted for (observe.ts), but an order in flight for over 30 s is reported, so work in flight is not drift; with
// `drained` (tests, demo, bench verdicts) in-flight orders are themselves a failure.
//
// The database side is read in one snapshot (repeatable read) in statements that each read a
// bounded part of the voucher, added up a page at a time: a voucher of a million orders is neither
// one statement that outlasts DB_STATEMENT_TIMEOUT_MS nor a million rows in memory. The pages are
// ranges of user ids, walked over the two indexes that start with (voucher_id, user_id): the
// quantity rows' primary key and orders_idempotency. Each page holds every quantity row and every
// order of its users, summed by user and status in SQL, so a user's units are judged against
// their row in one page, and an order whose user has no row is met in its page like any other.
import type { Transaction } from 'kysely';
import type { RedisClient } from '../infra/redis/client.js';
import type { Db } from '../infra/db/database.js';
import { type Database, ORDER_STATUSES, type StoredOrderStatus } from '../infra/db/types.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { countDrift, IN_CHUNK, observeVoucher } from './observe.js';
import type { ReconcileScripts } from '../infra/redis/scripts/reconcile.js';
import type { InflightReader } from '../orders/inflight.js';
import { VOUCHER_KINDS } from '../vouchers/kinds.js';
import { segmentShards } from '../vouchers/segments.js';
import { voucherFromRow } from '../vouchers/voucher.js';

export interface Check {
  id: 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I7';
  name: string;
  ok: boolean;
  /** What is wrong (first few offenders), empty when ok. */
  problems: string[];
}

export interface VoucherAudit {
  ok: boolean;
  checks: Check[];
  initialStock: number;
  dbStock: number;
  redisStock: number | null;
  sold: number;
  orders: Record<string, number>;
  inflight: number;
}

export interface AuditDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  inflight: InflightReader;
  scripts: Pick<ReconcileScripts, 'inspect'>;
}

export interface AuditOptions {
  /** Order ids a client saw admitted (202); each must be stored (I3). */
  admitted?: string[];
  /** Every admitted order should be stored by now: in-flight orders fail I4. */
  drained?: boolean;
  /** Quantity rows (and orders) per page of the database walk: PAGE, unless a test makes pages small. */
  pageSize?: number;
}

const FIRST = 10;
/** An admitted order not stored after this long is reported as stuck, on a live system too. */
const STUCK_INFLIGHT_MS = 30_000;
const ACTIVE = new Set<StoredOrderStatus>(['pending_payment', 'paid']);
/**
 * Quantity rows and orders per page. On a voucher of 1,000,000 orders among 10,000,000 (MariaDB,
 * 128 MiB buffer pool, 2 vCPU) a page's statements took 6-90 ms, 177 ms at most, far below
 * DB_STATEMENT_TIMEOUT_MS; the whole audit 20 s, in 600 statements.
 */
const PAGE = 5_000;
/** Queue places per HMGET: Redis runs one command at a time. */
const PLACES_STEP = 250;

type Trx = Transaction<Database>;

/** Keeps the first FIRST problems of a check; one is enough to fail it. */
function note(problems: string[], problem: string): void {
  if (problems.length < FIRST) problems.push(problem);
}

const increment = (map: Map<string, number>, key: string, by: number) => map.set(key, (map.get(key) ?? 0) + by);

/** I4 on the live system: Redis against what the database implies. */
async function redisConverges(deps: AuditDeps, voucherId: bigint, shards: number[]): Promise<string[]> {
  const observed = await observeVoucher(deps, voucherId, shards);
  if (observed.kind === 'missing') return ['voucher state missing from Redis'];
  if (observed.kind === 'busy') return ['not verified: the database kept changing while Redis was read (run again)'];
  if (observed.kind === 'not_found') return [];
  const drift = countDrift(observed.observation);
  if (!drift) return [];
  const problems: string[] = [];
  const { redis, expected } = observed.observation;
  if (drift.stock) problems.push(`Redis stock ${redis.stock} != ${expected.stock} implied by the database`);
  if (drift.inflightCounter) problems.push(`in-flight counter ${redis.inflightCounter} != ${expected.inflightCounter} records`);
  for (const [user, [have, want]] of drift.buyers) problems.push(`user ${user}: Redis counts ${have}, database implies ${want}`);
  return problems;
}

/**
 * I7, queue vouchers: every order belongs to a place of the queue, no place was admitted twice,
 * and no place still waits ahead of one that was admitted (admissions followed the order). Fed
 * buyers with their number of orders a page at a time, each buyer once with all their orders.
 */
function queueOrderCheck({ redis, keys }: AuditDeps, voucherId: bigint) {
  const problems: string[] = [];
  let last: { user: string; place: number } | null = null;
  return {
    async add(times: Map<string, number>): Promise<void> {
      const users = [...times.keys()];
      for (let i = 0; i < users.length; i += PLACES_STEP) {
        const step = users.slice(i, i + PLACES_STEP);
        (await redis.hmget(keys.queuePlaces(voucherId), ...step)).forEach((place, j) => {
          const user = step[j]!;
          if (place === null) note(problems, `user ${user} has an order but no place in the queue`);
          else if (!last || Number(place) > last.place) last = { user, place: Number(place) };
          const n = times.get(user)!;
          if (n > 1) note(problems, `the place of user ${user} was admitted ${n} times`);
        });
      }
    },
    async problems(): Promise<string[]> {
      const head = await redis.zrange(keys.waitlist(voucherId), '0', '0', 'WITHSCORES');
      if (last && head.length === 2 && Number(head[1]) < last.place) note(problems, `place ${head[1]} (user ${head[0]}) still waits, place ${last.place} (user ${last.user}) was admitted`);
      return problems;
    },
  };
}
type QueueOrderCheck = ReturnType<typeof queueOrderCheck>;

/** Which of `ids` are orders of the voucher, by primary key, IN_CHUNK at a time. */
async function storedAmong(trx: Trx, voucherId: string, ids: string[]): Promise<Set<string>> {
  const stored = new Set<string>();
  for (let i = 0; i < ids.length; i += IN_CHUNK) {
    const rows = await trx.selectFrom('orders').select('id').where('voucher_id', '=', voucherId).where('id', 'in', ids.slice(i, i + IN_CHUNK)).execute();
    for (const r of rows) stored.add(r.id);
  }
  return stored;
}

/** The databases' order of user ids, on their decimal text (no leading zeros): shorter is smaller. */
const compareUsers = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
/** `a` comes no later than `b` (null: past the last user). */
const atMost = (a: string, b: string | null) => b === null || compareUsers(a, b) <= 0;

/**
 * The voucher's buyers in pages of user ids (after, upper], read over the two indexes that start
 * with (voucher_id, user_id): the quantity rows' primary key and orders_idempotency. A page ends at
 * the `pageSize`-th quantity row or order, whichever comes first, so it reads at most `pageSize`
 * of each (and the rest of one user's orders), and each of its users' orders summed by status.
 */
async function* buyerPages(trx: Trx, voucherId: string, pageSize: number) {
  let after: string | null = null;
  for (;;) {
    const from: string | null = after;
    const rows: { user_id: string; quantity: number }[] = await trx
      .selectFrom('user_quantities')
      .select(['user_id', 'quantity'])
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .orderBy('user_id')
      .limit(pageSize)
      .execute();
    // The user of the pageSize-th order, off the index alone.
    const nthOrder: { user_id: string } | undefined = await trx
      .selectFrom('orders')
      .select('user_id')
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .orderBy('user_id')
      .limit(1)
      .offset(pageSize - 1)
      .executeTakeFirst();
    const lastRow = rows.length === pageSize ? rows[rows.length - 1]!.user_id : null;
    const upper: string | null = nthOrder && atMost(nthOrder.user_id, lastRow) ? nthOrder.user_id : lastRow;
    const orders = await trx
      .selectFrom('orders')
      .select((eb) => [
        'user_id',
        'status',
        eb.fn.countAll().as('n'),
        eb.fn.sum<string | number>('quantity').as('units'),
        // The lowest id of the group without a reason (a problem in the failed group only).
        eb.fn.min(eb.case().when(eb.or([eb('failure_reason', 'is', null), eb('failure_reason', '=', '')])).then(eb.ref('id')).end()).as('unreasoned'),
      ])
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .$if(upper !== null, (q) => q.where('user_id', '<=', upper!))
      .groupBy(['user_id', 'status'])
      .orderBy('user_id')
      .execute();
    yield {
      upper,
      rows: rows.filter((r) => atMost(r.user_id, upper)),
      orders: orders.map((o) => ({ userId: o.user_id, status: o.status, n: Number(o.n), units: Number(o.units), unreasoned: o.status === 'failed' ? o.unreasoned : null })),
    };
    if (upper === null) return;
    after = upper;
  }
}

interface ReadRequest {
  /** Order ids to look up (admitted, in flight). */
  lookup: string[];
  /** The voucher's orders in flight, read before the snapshot. */
  pending: { orderId: string; userId: string }[];
  /** Queue vouchers: fed every buyer with orders (I7). */
  queue: QueueOrderCheck | null;
  pageSize: number;
  drained: boolean;
}

interface DatabaseSide {
  voucher: { stock: number; initial_stock: number; per_user_limit: number };
  orders: Record<StoredOrderStatus, number>;
  sold: number;
  /** I2: users above the limit; quantity rows that disagree with the active orders. */
  overLimit: string[];
  rowMismatch: string[];
  /** Those of `lookup` stored as orders of the voucher. */
  stored: Set<string>;
  unreasoned: string[];
  releases: number;
}

/** The database side of the checks, in one snapshot. */
async function readDatabase(trx: Trx, voucherId: string, { lookup, pending, queue, pageSize, drained }: ReadRequest): Promise<DatabaseSide | null> {
  const voucher = await trx.selectFrom('vouchers').select(['stock', 'initial_stock', 'per_user_limit']).where('id', '=', voucherId).executeTakeFirst();
  if (!voucher) return null;
  const limit = voucher.per_user_limit;
  const stored = await storedAmong(trx, voucherId, lookup);
  const orders = Object.fromEntries(ORDER_STATUSES.map((s) => [s, 0])) as Record<StoredOrderStatus, number>;
  const side: DatabaseSide = { voucher, orders, sold: 0, overLimit: [], rowMismatch: [], stored, unreasoned: [], releases: 0 };
  // I7 counts an admission in flight and not stored with its buyer's orders: in the buyer's page.
  const inflightUsers = new Map<string, number>();
  for (const o of pending) if (!stored.has(o.orderId)) increment(inflightUsers, o.userId, 1);
  const waiting = [...inflightUsers].sort(([a], [b]) => compareUsers(a, b));
  let next = 0;

  for await (const page of buyerPages(trx, voucherId, pageSize)) {
    const active = new Map<string, number>();
    const times = new Map<string, number>();
    for (const o of page.orders) {
      orders[o.status] += o.n;
      if (ACTIVE.has(o.status)) increment(active, o.userId, o.units);
      increment(times, o.userId, o.n);
      if (o.unreasoned !== null) note(side.unreasoned, `failed order ${o.unreasoned} has no reason`);
    }
    const held = new Map(page.rows.map((r) => [r.user_id, r.quantity]));
    for (const user of [...new Set([...held.keys(), ...active.keys()])].sort(compareUsers)) {
      const [units, row] = [active.get(user) ?? 0, held.get(user) ?? 0];
      if (units > limit) note(side.overLimit, `user ${user} holds ${units} > limit ${limit}`);
      if (row !== units) note(side.rowMismatch, `user ${user}: quantity row ${row}, active orders ${units}`);
      side.sold += units;
    }
    if (!queue) continue;
    for (; next < waiting.length && atMost(waiting[next]![0], page.upper); next++) increment(times, ...waiting[next]!);
    await queue.add(times);
  }

  if (drained) {
    const releases = await trx.selectFrom('release_outbox').select((eb) => eb.fn.countAll().as('n')).where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
    side.releases = Number(releases.n);
  }
  return side;
}

export async function auditVoucher(deps: AuditDeps, voucherId: bigint, { admitted, drained = false, pageSize = PAGE }: AuditOptions = {}): Promise<VoucherAudit | null> {
  const { db, redis, keys, inflight } = deps;
  const id = voucherId.toString();
  const row = await db.selectFrom('vouchers').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) return null;
  const shards = segmentShards(voucherFromRow(row), keys);
  const stocks = await Promise.all(shards.map((s) => redis.hget(keys.voucher(voucherId, s), 'stock')));
  // Before the snapshot: an order it does not hold is still in this list.
  const pending = await inflight.ofVoucher(voucherId, shards);
  const redisStock = stocks.includes(null) ? null : stocks.reduce((n, s) => n + Number(s), 0);
  const queue = row.queue_opens_at ? queueOrderCheck(deps, voucherId) : null;

  const lookup = [...new Set([...(admitted ?? []), ...pending.map((o) => o.orderId)])];
  const side = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute((trx) => readDatabase(trx, id, { lookup, pending, queue, pageSize, drained }));
  if (!side) return null;
  const { voucher, sold, stored } = side;

  const i1: string[] = [];
  if (sold > voucher.initial_stock) i1.push(`sold ${sold} > initial stock ${voucher.initial_stock}`);
  if (voucher.stock !== voucher.initial_stock - sold) i1.push(`DB stock ${voucher.stock} != initial ${voucher.initial_stock} - sold ${sold}`);
  if (voucher.stock < 0) i1.push(`DB stock ${voucher.stock} < 0`);

  const i2 = [...side.overLimit, ...side.rowMismatch];

  const i3 = (admitted ?? []).filter((o) => !stored.has(o)).map((o) => `admitted order ${o} not stored`);
  i3.push(...side.unreasoned);
  // Live: normal in-flight work takes milliseconds; an order this old is stuck on its way to the
  // database (no consumer, a lost consumer group) and its buyer sees "processing" forever.
  const stuck = pending.filter((o) => !stored.has(o.orderId) && Date.now() - o.createdAt.getTime() > STUCK_INFLIGHT_MS);
  if (stuck.length) i3.push(`${stuck.length} admitted order(s) in flight for over ${STUCK_INFLIGHT_MS / 1000} s, not stored (first: ${stuck[0]!.orderId})`);

  const i4: string[] = [];
  if (drained) {
    if (pending.length) i4.push(`${pending.length} order(s) still in flight`);
    if (side.releases) i4.push(`${side.releases} release(s) not given back to Redis yet`);
  }
  if (VOUCHER_KINDS[row.kind].redisGated) i4.push(...(await redisConverges(deps, voucherId, shards)));

  // An order id is the orders table's primary key: stored twice it cannot be; given twice it can.
  const i5: string[] = [];
  if (admitted && new Set(admitted).size !== admitted.length) i5.push('the same order id was admitted twice');

  const i7 = queue ? await queue.problems() : [];

  const checks: Check[] = [
    { id: 'I1', name: 'no oversell', ok: i1.length === 0, problems: i1.slice(0, FIRST) },
    { id: 'I2', name: 'per-user limit', ok: i2.length === 0, problems: i2.slice(0, FIRST) },
    { id: 'I3', name: 'nothing lost', ok: i3.length === 0, problems: i3.slice(0, FIRST) },
    { id: 'I4', name: 'Redis converges to the DB', ok: i4.length === 0, problems: i4.slice(0, FIRST) },
    { id: 'I5', name: 'no duplicates', ok: i5.length === 0, problems: i5.slice(0, FIRST) },
    ...(queue ? [{ id: 'I7' as const, name: 'admitted in queue order, each place once', ok: i7.length === 0, problems: i7.slice(0, FIRST) }] : []),
  ];
  return {
    ok: checks.every((c) => c.ok),
    checks,
    initialStock: voucher.initial_stock,
    dbStock: voucher.stock,
    redisStock,
    sold,
    orders: side.orders,
    inflight: pending.length,
  };
}
