// The invariants of docs/design.md ("Invariants") for one voucher, evaluated against both stores. On a live system
// (`seckill audit`) Redis is compared with what the database implies once in-flight orders and
// pending releases are accounted for (observe.ts), but an order in flight for over 30 s is reported, so work in flight is not drift; with
// `drained` (tests, demo, bench verdicts) in-flight orders are themselves a failure. The database
// side is read a page of buyers at a time (audit-database.ts).
import type { Db } from '../infra/db/database.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { ReconcileScripts } from '../infra/redis/scripts/reconcile.js';
import { inSteps } from '../infra/redis/walk.js';
import type { InflightReader } from '../orders/inflight.js';
import { VOUCHER_KINDS } from '../vouchers/kinds.js';
import { segmentShards } from '../vouchers/segments.js';
import { voucherFromRow } from '../vouchers/voucher.js';
import { FIRST, note, readDatabase } from './audit-database.js';
import type { LostOrders } from './lost-orders.js';
import { countDrift, observeVoucher } from './observe.js';

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
  /** Acknowledged orders the database no longer holds (a failover to a standby behind). */
  lostOrders?: Pick<LostOrders, 'missing'>;
}

export interface AuditOptions {
  /** Order ids a client saw admitted (202); each must be stored (I3). */
  admitted?: string[];
  /** Every admitted order should be stored by now: in-flight orders fail I4. */
  drained?: boolean;
  /** Quantity rows (and orders) per page of the database walk: PAGE (audit-database.ts), unless a test makes pages small. */
  pageSize?: number;
}

/** An admitted order not stored after this long is reported as stuck, on a live system too. */
const STUCK_INFLIGHT_MS = 30_000;

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
      for (const step of inSteps(users)) {
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

export async function auditVoucher(deps: AuditDeps, voucherId: bigint, { admitted, drained = false, pageSize }: AuditOptions = {}): Promise<VoucherAudit | null> {
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
  // Stored once, acknowledged, and gone: the workers store them again when they notice the database changed.
  const lost = (await deps.lostOrders?.missing(voucherId, shards)) ?? [];
  if (lost.length) i3.push(`${lost.length} acknowledged order(s) no longer in the database (lost in a failover?), not stored again yet (first: ${lost[0]!.orderId})`);

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
