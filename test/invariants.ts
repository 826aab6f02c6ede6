// The invariants of DESIGN.md §2, checked against both stores once in-flight work has drained.
import assert from 'node:assert/strict';
import type { Container } from '../src/container.js';

export interface VoucherTruth {
  dbStock: number;
  initialStock: number;
  perUserLimit: number;
  orders: { id: string; user_id: string; quantity: number; status: string; failure_reason: string | null }[];
  quantities: Map<string, number>;
  redisStock: number | null;
  redisInflightCount: number;
  redisBuyers: Map<string, number>;
  inflight: number;
}

export async function readTruth(c: Container, voucherId: string): Promise<VoucherTruth> {
  const id = BigInt(voucherId);
  const voucher = await c.db.selectFrom('vouchers').selectAll().where('id', '=', voucherId).executeTakeFirstOrThrow();
  const orders = await c.db
    .selectFrom('orders')
    .select(['id', 'user_id', 'quantity', 'status', 'failure_reason'])
    .where('voucher_id', '=', voucherId)
    .execute();
  const quantities = new Map(
    (await c.db.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).execute())
      .filter((r) => r.quantity > 0)
      .map((r) => [r.user_id, r.quantity]),
  );
  const [stock, inflightCount] = await c.redis.hmget(c.keys.voucher(id), 'stock', 'inflight');
  const buyers = await c.redis.hgetall(c.keys.buyers(id));
  return {
    dbStock: voucher.stock,
    initialStock: voucher.initial_stock,
    perUserLimit: voucher.per_user_limit,
    orders,
    quantities,
    redisStock: stock === null ? null : Number(stock),
    redisInflightCount: Number(inflightCount ?? 0),
    redisBuyers: new Map(Object.entries(buyers).map(([u, q]) => [u, Number(q)])),
    inflight: (await c.inflight.ofVoucher(id)).length,
  };
}

/** Waits until the voucher has no in-flight orders left (the pipeline has drained). */
export async function waitForDrain(c: Container, voucherId: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await c.inflight.ofVoucher(BigInt(voucherId))).length > 0) {
    if (Date.now() > deadline) throw new Error(`voucher ${voucherId} did not drain within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * I1 no oversell, I2 per-user limit, I3 nothing lost, I4 Redis = DB, I5 no duplicates.
 * `admitted` are the order ids that got a 202.
 */
export async function assertInvariants(c: Container, voucherId: string, admitted: string[]): Promise<VoucherTruth> {
  const t = await readTruth(c, voucherId);
  const active = t.orders.filter((o) => o.status === 'pending_payment' || o.status === 'paid');
  const sold = active.reduce((n, o) => n + o.quantity, 0);
  // I1
  assert.ok(sold <= t.initialStock, `I1 oversold: ${sold} > ${t.initialStock}`);
  assert.equal(t.dbStock, t.initialStock - sold, 'I1 DB stock = initial - sold');
  assert.ok(t.dbStock >= 0);
  // I2
  const perUser = new Map<string, number>();
  for (const o of active) perUser.set(o.user_id, (perUser.get(o.user_id) ?? 0) + o.quantity);
  for (const [u, q] of perUser) assert.ok(q <= t.perUserLimit, `I2 user ${u} holds ${q} > ${t.perUserLimit}`);
  assert.deepEqual(t.quantities, perUser, 'I2 per-user quantity rows match active orders');
  // I3 + I5
  const stored = new Set(t.orders.map((o) => o.id));
  assert.equal(stored.size, t.orders.length, 'I5 each order id stored once');
  const missing = admitted.filter((id) => !stored.has(id));
  assert.deepEqual(missing, [], 'I3 every admitted order is stored');
  for (const o of t.orders.filter((o) => o.status === 'failed')) assert.ok(o.failure_reason, `I3 failed order ${o.id} has a reason`);
  // I4
  assert.equal(t.inflight, 0, 'I4 no in-flight orders left');
  assert.equal(t.redisInflightCount, 0, 'I4 in-flight counter back to 0');
  assert.equal(t.redisStock, t.dbStock, 'I4 Redis stock = DB stock');
  assert.deepEqual(t.redisBuyers, t.quantities, 'I4 Redis buyer counts = DB quantities');
  return t;
}
