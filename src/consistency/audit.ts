// The invariants of docs/design.md ("Invariants") for one voucher, evaluated against both stores. On a live system
// (`seckill audit`) Redis is compared with what the database implies once in-flight orders and
// pending releases are accounted for (observe.ts), but an order in flight for over 30 s is reported, so work in flight is not drift; with
// `drained` (tests, demo, bench verdicts) in-flight orders are themselves a failure.
import type { RedisClient } from '../infra/redis/client.js';
import type { Db } from '../infra/db/database.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { countDrift, observeVoucher } from './observe.js';
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

const FIRST = 10;
/** An admitted order not stored after this long is reported as stuck, on a live system too. */
const STUCK_INFLIGHT_MS = 30_000;
const ACTIVE = new Set(['pending_payment', 'paid']);

function sameCounts(a: Map<string, number>, b: Map<string, number>, label: [string, string]): string[] {
  const problems: string[] = [];
  for (const user of new Set([...a.keys(), ...b.keys()])) {
    if ((a.get(user) ?? 0) !== (b.get(user) ?? 0)) problems.push(`user ${user}: ${label[0]} ${a.get(user) ?? 0}, ${label[1]} ${b.get(user) ?? 0}`);
  }
  return problems;
}

export interface AuditOptions {
  /** Order ids a client saw admitted (202); each must be stored (I3). */
  admitted?: string[];
  /** Every admitted order should be stored by now: in-flight orders fail I4. */
  drained?: boolean;
}

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
 * and no place still waits ahead of one that was admitted (admissions followed the order).
 */
async function queueOrderKept(deps: AuditDeps, voucherId: bigint, admittedUsers: string[]): Promise<string[]> {
  const { redis, keys } = deps;
  const [places, head] = await Promise.all([redis.hgetall(keys.queuePlaces(voucherId)), redis.zrange(keys.waitlist(voucherId), '0', '0', 'WITHSCORES')]);
  const problems: string[] = [];
  const times = new Map<string, number>();
  for (const user of admittedUsers) times.set(user, (times.get(user) ?? 0) + 1);
  let last: { user: string; place: number } | null = null;
  for (const [user, n] of times) {
    const place = places[user];
    if (place === undefined) problems.push(`user ${user} has an order but no place in the queue`);
    else if (!last || Number(place) > last.place) last = { user, place: Number(place) };
    if (n > 1) problems.push(`the place of user ${user} was admitted ${n} times`);
  }
  if (last && head.length === 2 && Number(head[1]) < last.place) problems.push(`place ${head[1]} (user ${head[0]}) still waits, place ${last.place} (user ${last.user}) was admitted`);
  return problems;
}

export async function auditVoucher(deps: AuditDeps, voucherId: bigint, { admitted, drained = false }: AuditOptions = {}): Promise<VoucherAudit | null> {
  const { db, redis, keys, inflight } = deps;
  const id = voucherId.toString();
  const voucher = await db.selectFrom('vouchers').selectAll().where('id', '=', id).executeTakeFirst();
  if (!voucher) return null;
  const orders = await db
    .selectFrom('orders')
    .select(['id', 'user_id', 'quantity', 'status', 'failure_reason'])
    .where('voucher_id', '=', id)
    .execute();
  const quantities = new Map(
    (await db.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', id).where('quantity', '>', 0).execute()).map(
      (r) => [r.user_id, r.quantity],
    ),
  );
  const shards = segmentShards(voucherFromRow(voucher), keys);
  const stocks = await Promise.all(shards.map((s) => redis.hget(keys.voucher(voucherId, s), 'stock')));
  const pending = await inflight.ofVoucher(voucherId, shards);
  const redisStock = stocks.includes(null) ? null : stocks.reduce((n, s) => n + Number(s), 0);

  const active = orders.filter((o) => ACTIVE.has(o.status));
  const sold = active.reduce((n, o) => n + o.quantity, 0);
  const perUser = new Map<string, number>();
  for (const o of active) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + o.quantity);
  const byStatus: Record<string, number> = { pending_payment: 0, paid: 0, cancelled: 0, expired: 0, failed: 0 };
  for (const o of orders) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1;

  const i1: string[] = [];
  if (sold > voucher.initial_stock) i1.push(`sold ${sold} > initial stock ${voucher.initial_stock}`);
  if (voucher.stock !== voucher.initial_stock - sold) i1.push(`DB stock ${voucher.stock} != initial ${voucher.initial_stock} - sold ${sold}`);
  if (voucher.stock < 0) i1.push(`DB stock ${voucher.stock} < 0`);

  const i2 = [...perUser].filter(([, q]) => q > voucher.per_user_limit).map(([u, q]) => `user ${u} holds ${q} > limit ${voucher.per_user_limit}`);
  i2.push(...sameCounts(quantities, perUser, ['quantity row', 'active orders']));

  const stored = new Set(orders.map((o) => o.id));
  const i3 = (admitted ?? []).filter((o) => !stored.has(o)).map((o) => `admitted order ${o} not stored`);
  i3.push(...orders.filter((o) => o.status === 'failed' && !o.failure_reason).map((o) => `failed order ${o.id} has no reason`));
  // Live: normal in-flight work takes milliseconds; an order this old is stuck on its way to the
  // database (no consumer, a lost consumer group) and its buyer sees "processing" forever.
  const stuck = pending.filter((o) => !stored.has(o.orderId) && Date.now() - o.createdAt.getTime() > STUCK_INFLIGHT_MS);
  if (stuck.length) i3.push(`${stuck.length} admitted order(s) in flight for over ${STUCK_INFLIGHT_MS / 1000} s, not stored (first: ${stuck[0]!.orderId})`);

  const i4: string[] = [];
  if (drained) {
    if (pending.length) i4.push(`${pending.length} order(s) still in flight`);
    const releases = await db.selectFrom('release_outbox').select('order_id').where('voucher_id', '=', id).execute();
    if (releases.length) i4.push(`${releases.length} release(s) not given back to Redis yet`);
  }
  if (VOUCHER_KINDS[voucher.kind].redisGated) i4.push(...(await redisConverges(deps, voucherId, shards)));

  const i5: string[] = [];
  if (stored.size !== orders.length) i5.push(`${orders.length - stored.size} duplicated order id(s)`);
  if (admitted && new Set(admitted).size !== admitted.length) i5.push('the same order id was admitted twice');

  const i7 = voucher.queue_opens_at ? await queueOrderKept(deps, voucherId, [...orders.map((o) => o.user_id), ...pending.filter((o) => !stored.has(o.orderId)).map((o) => o.userId)]) : [];

  const checks: Check[] = [
    { id: 'I1', name: 'no oversell', ok: i1.length === 0, problems: i1.slice(0, FIRST) },
    { id: 'I2', name: 'per-user limit', ok: i2.length === 0, problems: i2.slice(0, FIRST) },
    { id: 'I3', name: 'nothing lost', ok: i3.length === 0, problems: i3.slice(0, FIRST) },
    { id: 'I4', name: 'Redis converges to the DB', ok: i4.length === 0, problems: i4.slice(0, FIRST) },
    { id: 'I5', name: 'no duplicates', ok: i5.length === 0, problems: i5.slice(0, FIRST) },
    ...(voucher.queue_opens_at ? [{ id: 'I7' as const, name: 'admitted in queue order, each place once', ok: i7.length === 0, problems: i7.slice(0, FIRST) }] : []),
  ];
  return {
    ok: checks.every((c) => c.ok),
    checks,
    initialStock: voucher.initial_stock,
    dbStock: voucher.stock,
    redisStock,
    sold,
    orders: byStatus,
    inflight: pending.length,
  };
}
