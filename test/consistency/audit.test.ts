import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';
import { type Finished, runSeckill } from '../../support/processes.js';

const t = await startTestApp(suiteScope(), 'audit', { RECONCILE_INTERVAL_MS: '0' });
await t.c.startWorkers();

/** `seckill audit` as an operator runs it, against this file's database and Redis prefix. */
async function audit(voucherId: string, ...flags: string[]): Promise<Finished> {
  const pick = ['DATABASE_URL', 'REDIS_URL', 'REDIS_PREFIX', 'SHARDS', 'REDIS_CLUSTER_NODES'];
  const env = Object.fromEntries(pick.map((name) => [name, t.env[name] ?? '']));
  return runSeckill(['audit', '--voucher', voucherId, ...flags], { env });
}

async function soldVoucher(stock: number, buyers: number) {
  const v = await createVoucher(t, { stock, perUserLimit: 1 });
  await burst(t, v.id, range(1, buyers));
  await waitForDrain(t.c, v.id);
  return v;
}

describe('seckill audit', () => {
  it('passes a consistent voucher (exit 0), with a per-invariant verdict', async () => {
    const v = await soldVoucher(10, 6);
    const text = await audit(v.id);
    assert.equal(text.code, 0, text.stdout);
    for (const id of ['I1', 'I2', 'I3', 'I4', 'I5']) assert.match(text.stdout, new RegExp(`^ok +${id} `, 'm'));
    const json = await audit(v.id, '--json');
    assert.equal(JSON.parse(json.stdout).ok, true);
  });

  it('fails loudly on an order beyond the stock (I1) and a user above the limit (I2)', async () => {
    const v = await soldVoucher(3, 3); // sold out
    const order = (id: string, user: string) => ({ id, voucher_id: v.id, user_id: user, quantity: 1, status: 'pending_payment' as const, created_at: new Date(), expires_at: new Date(Date.now() + 600_000) });
    await t.c.db.insertInto('orders').values(order('900000000000000001', '77')).execute();
    await t.c.db.insertInto('user_quantities').values({ voucher_id: v.id, user_id: '77', quantity: 1 }).execute();
    await t.c.db.insertInto('orders').values(order('900000000000000002', '1')).execute();
    await t.c.db.updateTable('user_quantities').set({ quantity: 2 }).where('voucher_id', '=', v.id).where('user_id', '=', '1').execute();
    const { code, stdout } = await audit(v.id);
    assert.equal(code, 1, stdout);
    assert.match(stdout, /^FAIL I1 no oversell: sold 5 > initial stock 3/m);
    assert.match(stdout, /^FAIL I2 per-user limit: user 1 holds 2 > limit 1/m);
  });

  it('fails I4 when Redis disagrees with the database, and passes again once reconciled', async () => {
    const v = await soldVoucher(10, 4);
    await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'stock', 3);
    const broken = await audit(v.id);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /^FAIL I4 Redis converges to the DB: Redis stock 9 != 6 implied by the database/m);
    await t.c.reconciler.reconcileVoucher(BigInt(v.id));
    await t.c.reconciler.reconcileVoucher(BigInt(v.id));
    assert.equal((await audit(v.id)).code, 0);
  });

  it('exits 3 for an unknown voucher and 1 for a malformed id', async () => {
    assert.equal((await audit('123456789')).code, 3);
    assert.equal((await audit('abc')).code, 1);
  });
});

describe('the audit route', () => {
  it('answers the same verdict over HTTP, and checks that given admitted orders are stored', async () => {
    const v = await soldVoucher(5, 3);
    const headers = { authorization: `Bearer ${await t.admin()}` };
    const clean = await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}/audit`, headers });
    assert.equal(clean.json().ok, true, clean.body);
    const stored = (await t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).execute()).map((r) => r.id);
    const lost = await t.app.inject({ method: 'POST', url: `/api/vouchers/${v.id}/audit`, headers, payload: { admitted: [...stored, '999999999999'] } });
    const i3 = lost.json().checks.find((c: { id: string }) => c.id === 'I3');
    assert.deepEqual([lost.json().ok, i3.ok, i3.problems], [false, false, ['admitted order 999999999999 not stored']]);
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}/audit`, headers: { authorization: `Bearer ${await t.token(3)}` } })).statusCode, 403);
  });
});

describe('GET /api/vouchers/:id/stats', () => {
  it('reports both stores, orders by status, the waitlist and dead letters (admin only)', async () => {
    const v = await createVoucher(t, { stock: 4, waitlist: true, paymentTimeoutSeconds: 600 });
    const admitted = await burst(t, v.id, range(1, 4));
    await claim(t, v.id, 99); // sold out: waits
    await waitForDrain(t.c, v.id);
    await orderAction(t, 'pay', admitted[0]!, await ownerOf(admitted[0]!));
    const url = `/api/vouchers/${v.id}/stats`;
    const stats = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${await t.admin()}` } });
    assert.equal(stats.statusCode, 200, stats.body);
    assert.deepEqual(stats.json(), {
      initialStock: 4,
      dbStock: 0,
      redisStock: 0,
      inFlight: 0,
      orders: { pending_payment: 3, paid: 1, cancelled: 0, expired: 0, failed: 0, refunded: 0 },
      waitlist: 1,
      deadLetters: 0,
      refundDue: 0,
    });
    assert.equal((await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${await t.token(5)}` } })).statusCode, 403);
    const unknown = await t.app.inject({ method: 'GET', url: '/api/vouchers/123456789/stats', headers: { authorization: `Bearer ${await t.admin()}` } });
    assert.equal(unknown.json().code, 'VOUCHER_NOT_FOUND');
  });
});

async function ownerOf(orderId: string): Promise<number> {
  const row = await t.c.db.selectFrom('orders').select('user_id').where('id', '=', orderId).executeTakeFirstOrThrow();
  return Number(row.user_id);
}
