// Refunds: a paid order becomes `refunded`; with restock (the default) its units go back on sale
// through the expiry's path — the waitlist first, else Redis' stock and the buyer's count — and
// without it (or after the end) they stay sold. Both stores, the stats, the audit and
// reconciliation agree after each.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';
import { burst, claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { bearer, confirm, orderRow, readOrder, refund } from './payments-support.js';

const t = await startTestApp(suiteScope(), 'pay_refund', { RECONCILE_INTERVAL_MS: '0', BUCKET_USER_RATE: '0' });
await t.c.startWorkers();

async function paidOrders(voucherId: string, users: number[]): Promise<string[]> {
  const ids = await burst(t, voucherId, users);
  assert.equal(ids.length, users.length);
  await waitForDrain(t.c, voucherId);
  for (const id of ids) assert.equal((await confirm(t, id, { paymentId: `pay-${id}`, amount: 100, currency: 'USD' })).statusCode, 200);
  return ids;
}

async function stats(voucherId: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/stats`, headers: bearer(await t.admin()) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** dbStock + units of pending and paid orders = initial stock − units refunded without restock, from the rows and from stats. */
async function assertStockAccounted(voucherId: string, initial: number) {
  const truth = await readTruth(t.c, voucherId);
  const held = truth.orders.filter((o) => o.status === 'pending_payment' || o.status === 'paid').reduce((n, o) => n + o.quantity, 0);
  const rows = await t.c.db.selectFrom('orders').select(['quantity', 'refund_restocked']).where('voucher_id', '=', voucherId).where('status', '=', 'refunded').execute();
  const kept = rows.filter((r) => !r.refund_restocked).reduce((n, r) => n + r.quantity, 0);
  assert.equal(truth.dbStock + held, initial - kept);
  const s = await stats(voucherId);
  assert.equal(s.dbStock + s.orders.pending_payment + s.orders.paid, initial - kept); // one unit per order here
  assert.equal(s.orders.refunded, rows.length);
}

/** Reconciliation finds nothing to repair: Redis already agrees with the database. */
async function assertNoRepair(voucherId: string) {
  const before = await readTruth(t.c, voucherId);
  const report = await t.c.reconciler.reconcileVoucher(BigInt(voucherId));
  assert.equal(report.repaired, 0, JSON.stringify(report.drift));
  const after = await readTruth(t.c, voucherId);
  assert.equal(after.redisStock, before.redisStock);
  assert.deepEqual(after.redisBuyers, before.redisBuyers);
}

describe('refunds', () => {
  it('with restock, the unit goes to the waitlist first; without, it stays sold; again answers the same; invariants hold in both stores', async () => {
    const v = await createVoucher(t, { stock: 3, waitlist: true, price: 100, currency: 'USD' });
    const [first, second, third] = await paidOrders(v.id, [1, 2, 3]);
    const waiting = await claim(t, v.id, 4);
    assert.equal(waiting.statusCode, 409);
    assert.equal(waiting.json().waitlisted, true);

    const res = await refund(t, first!);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'refunded');
    assert.ok(res.json().refundedAt);
    assert.equal(res.json().payment.paymentId, `pay-${first}`);
    const again = await refund(t, first!, { restock: false });
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), res.json());
    assert.equal(Boolean((await orderRow(t, first!)).refund_restocked), true);

    // The waitlist's head got the unit: an order of user 4, stored by the pipeline.
    await waitForDrain(t.c, v.id);
    const promoted = (await t.c.db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', v.id).where('user_id', '=', '4').execute());
    assert.deepEqual(promoted.map((o) => o.status), ['pending_payment']);
    let truth = await assertInvariants(t.c, v.id, [first!, second!, third!, promoted[0]!.id]);
    assert.equal(truth.redisStock, 0);
    assert.equal(truth.dbStock, 0);
    assert.equal(truth.redisBuyers.get('1') ?? 0, 0);
    assert.equal(truth.redisBuyers.get('4'), 1);
    await assertStockAccounted(v.id, 3);
    await assertNoRepair(v.id);

    const kept = await refund(t, second!, { restock: false });
    assert.equal(kept.statusCode, 200, kept.body);
    assert.equal(Boolean((await orderRow(t, second!)).refund_restocked), false);
    truth = await assertInvariants(t.c, v.id, [first!, second!, third!, promoted[0]!.id]);
    assert.equal(truth.redisStock, 0);
    assert.equal(truth.dbStock, 0);
    assert.equal(truth.redisBuyers.get('2'), 1); // still sold to the buyer: their limit still counts it
    await assertStockAccounted(v.id, 3);
    await assertNoRepair(v.id);

    const notPaid = await refund(t, promoted[0]!.id);
    assert.equal(notPaid.statusCode, 409);
    assert.equal(notPaid.json().code, 'ORDER_NOT_PAID');
    assert.equal((await refund(t, third!, { restock: true }, await t.token(3))).statusCode, 403);
    assert.equal((await refund(t, third!, {}, await t.admin())).statusCode, 200);
  });

  it('without a waitlist, a restocked unit is back in Redis and another buyer claims it; after the end a refund keeps the units sold', async () => {
    const v = await createVoucher(t, { stock: 2, price: 100, currency: 'USD' });
    const [a, b] = await paidOrders(v.id, [21, 22]);
    assert.equal((await refund(t, a!)).statusCode, 200);
    let truth = await assertInvariants(t.c, v.id, [a!, b!]);
    assert.equal(truth.redisStock, 1);
    assert.equal(truth.dbStock, 1);
    assert.equal(truth.redisBuyers.get('21') ?? 0, 0);
    await assertNoRepair(v.id);
    const again = await claim(t, v.id, 23);
    assert.equal(again.statusCode, 202, again.body);
    await waitForDrain(t.c, v.id);
    await assertStockAccounted(v.id, 2);

    // The sale ends (in the database, whose clock decides it): restock is not possible any more.
    await t.c.db.updateTable('vouchers').set({ end_at: new Date(Date.now() - 1000) }).where('id', '=', v.id).execute();
    const late = await refund(t, b!, { restock: true });
    assert.equal(late.statusCode, 200, late.body);
    assert.equal(Boolean((await orderRow(t, b!)).refund_restocked), false);
    truth = await assertInvariants(t.c, v.id, [a!, b!, again.json().orderId]);
    assert.equal(truth.redisStock, 0);
    assert.equal(truth.dbStock, 0);
    await assertStockAccounted(v.id, 2);
    await assertNoRepair(v.id);
    assert.equal((await readOrder(t, b!)).status, 'refunded');
  });

  it('once a queue has closed (a draw row closed in the database), a refund keeps the units sold', async () => {
    const v = await createVoucher(t, { stock: 1, price: 100, currency: 'USD' });
    const [order] = await paidOrders(v.id, [31]);
    await t.c.db.insertInto('queue_draws').values({ voucher_id: v.id, seed: '00', closed_at: new Date() }).execute();
    assert.equal((await refund(t, order!)).statusCode, 200);
    assert.equal(Boolean((await orderRow(t, order!)).refund_restocked), false);
    const truth = await assertInvariants(t.c, v.id, [order!]);
    assert.equal(truth.redisStock, 0);
    assert.equal(truth.dbStock, 0);
    await assertStockAccounted(v.id, 1);
  });
});
