// The shop confirms payments from its backend: applied once per (provider, paymentId), or kept
// refund_due with its reason when the order cannot take it; the order, the payment rows, the order
// counts, the event outbox and the metric say the same.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { claim, createVoucher, orderAction, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { bearer, confirm, eventRows, metric, orderRow, paymentRows, readOrder, refund, serviceToken } from './payments-support.js';

// Events on with no relay running: the outbox rows stay to be read.
const t = await startTestApp(suiteScope(), 'pay_confirm', { EVENTS_AMQP_URL: 'amqp://127.0.0.1:1', BUCKET_USER_RATE: '0', DEFAULT_CURRENCY: 'EUR' });
let nextUser = 100;

/** A common voucher's order (stored at once) of a fresh buyer. */
async function newOrder(spec: Record<string, unknown> = { price: 1250, currency: 'USD' }, quantity = 1) {
  const v = await createVoucher(t, { kind: 'common', stock: 5, perUserLimit: 2, paymentTimeoutSeconds: 600, ...spec });
  const user = nextUser++;
  const res = await claim(t, v.id, user, { quantity });
  assert.equal(res.statusCode, 201, res.body);
  return { voucher: v, user, orderId: res.json().orderId as string };
}

const counts = async (voucherId: string) =>
  Object.fromEntries(
    (await t.c.db.selectFrom('voucher_order_counts').select(['status', (eb) => eb.fn.sum<string>('n').as('n')]).where('voucher_id', '=', voucherId).groupBy('status').execute()).map((r) => [r.status, Number(r.n)]),
  );

describe('confirming payments', () => {
  it('a voucher has a price and a currency (DEFAULT_CURRENCY when left out); an order its amount; an unsafe amount is refused', async () => {
    const v = await createVoucher(t, { kind: 'common', price: 999 });
    assert.equal(v.price, 999);
    assert.equal(v.currency, 'EUR');
    const { orderId } = await newOrder({ price: 1250, currency: 'USD' }, 2);
    const order = await readOrder(t, orderId);
    assert.equal(order.amount, 2500);
    assert.equal(order.currency, 'USD');
    assert.equal(order.payment, undefined);
    const tooBig = await t.app.inject({
      method: 'POST', url: '/api/vouchers', headers: bearer(await t.admin()),
      payload: { title: 'x', kind: 'common', stock: 1, perUserLimit: 10_000, price: 1_000_000_000_000, beginAt: new Date().toISOString(), endAt: new Date(Date.now() + 60_000).toISOString() },
    });
    assert.equal(tooBig.statusCode, 400, tooBig.body);
    const badCurrency = await t.app.inject({
      method: 'POST', url: '/api/vouchers', headers: bearer(await t.admin()),
      payload: { title: 'x', kind: 'common', stock: 1, currency: 'usd', beginAt: new Date().toISOString(), endAt: new Date(Date.now() + 60_000).toISOString() },
    });
    assert.equal(badCurrency.statusCode, 400, badCurrency.body);
  });

  it('when the service confirms a payment (currency in any case), then the order is paid with it; the same payment again answers the same and changes nothing', async () => {
    const { voucher, orderId } = await newOrder();
    const applied = await metric(t, 'seckill_payments_total{outcome="applied"}');
    const first = await confirm(t, orderId, { paymentId: 'pi_1', amount: 1250, currency: 'usd' });
    assert.equal(first.statusCode, 200, first.body);
    const order = first.json();
    assert.equal(order.status, 'paid');
    assert.deepEqual({ ...order.payment, at: undefined }, { paymentId: 'pi_1', provider: 'shop', amount: 1250, currency: 'USD', at: undefined });
    const again = await confirm(t, orderId, { paymentId: 'pi_1', amount: 1250, currency: 'USD' });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), order);
    assert.deepEqual(await paymentRows(t, orderId), [{ provider: 'shop', payment_id: 'pi_1', amount: '1250', currency: 'USD', status: 'applied', reason: null }]);
    assert.deepEqual(await eventRows(t, orderId), ['stored:pending_payment', 'paid:paid']);
    assert.deepEqual(await counts(voucher.id), { pending_payment: 0, paid: 1 });
    assert.equal(await metric(t, 'seckill_payments_total{outcome="applied"}'), applied + 1);
    // The buyer reads it too, with its payment.
    const owner = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer(await t.token(BigInt(order.userId))) });
    assert.equal(owner.json().payment.paymentId, 'pi_1');
  });

  it('an admin confirms too; a buyer gets 403 on the payments route, even for their own order', async () => {
    const { orderId, user } = await newOrder();
    const buyer = await confirm(t, orderId, { paymentId: 'pi_b', amount: 1250, currency: 'USD' }, await t.token(user));
    assert.equal(buyer.statusCode, 403, buyer.body);
    assert.deepEqual(await paymentRows(t, orderId), []);
    const admin = await confirm(t, orderId, { paymentId: 'pi_a', amount: 1250, currency: 'USD', provider: 'adyen' }, await t.admin());
    assert.equal(admin.statusCode, 200, admin.body);
    assert.equal(admin.json().payment.provider, 'adyen');
  });

  it('a second payment of a paid order is a duplicate, another amount or currency a mismatch: 409, order unchanged, kept refund_due once however often sent', async () => {
    const { voucher, orderId } = await newOrder();
    assert.equal((await confirm(t, orderId, { paymentId: 'pi_ok', amount: 1250, currency: 'USD' })).statusCode, 200);
    const dup = await metric(t, 'seckill_payments_total{outcome="duplicate"}');
    for (let i = 0; i < 2; i++) {
      const res = await confirm(t, orderId, { paymentId: 'pi_dup', amount: 1250, currency: 'USD' });
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'ORDER_PAID');
      assert.equal(res.json().reason, 'duplicate');
    }
    assert.equal(await metric(t, 'seckill_payments_total{outcome="duplicate"}'), dup + 1);

    const other = await newOrder();
    for (const [paymentId, amount, currency] of [['pi_m1', 1000, 'USD'], ['pi_m2', 1250, 'EUR']] as const) {
      const res = await confirm(t, other.orderId, { paymentId, amount, currency });
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'PAYMENT_MISMATCH');
      assert.equal((await confirm(t, other.orderId, { paymentId, amount, currency })).json().code, 'PAYMENT_MISMATCH');
    }
    assert.equal((await orderRow(t, other.orderId)).status, 'pending_payment');
    assert.deepEqual((await paymentRows(t, other.orderId)).map((p) => `${p.payment_id}:${p.status}:${p.reason}:${p.amount}:${p.currency}`), [
      'pi_m1:refund_due:mismatch:1000:USD',
      'pi_m2:refund_due:mismatch:1250:EUR',
    ]);
    assert.deepEqual(await eventRows(t, other.orderId), ['stored:pending_payment', 'refund_due:pending_payment', 'refund_due:pending_payment']);
    assert.deepEqual((await paymentRows(t, orderId)).map((p) => `${p.payment_id}:${p.status}:${p.reason}`), ['pi_ok:applied:null', 'pi_dup:refund_due:duplicate']);
    assert.deepEqual(await counts(voucher.id), { pending_payment: 0, paid: 1 });
    // After a refund, a payment of the order is a duplicate too.
    assert.equal((await refund(t, orderId, { restock: false })).statusCode, 200);
    assert.deepEqual((await eventRows(t, orderId)).slice(-2), ['refund_due:paid', 'refunded:refunded']);
    const late = await confirm(t, orderId, { paymentId: 'pi_after', amount: 1250, currency: 'USD' });
    assert.equal(late.json().code, 'ORDER_REFUNDED');
  });

  it('a payment after the deadline, of a cancelled order or of an expired one is late: 409 with the state, kept refund_due; the order stays as it is (expired when due)', async () => {
    const due = await newOrder();
    await t.c.db.updateTable('orders').set({ expires_at: dialectOf(t.c.db).nowPlusSeconds(-1) }).where('id', '=', due.orderId).execute();
    const res = await confirm(t, due.orderId, { paymentId: 'pi_late', amount: 1250, currency: 'USD' });
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json().code, 'ORDER_EXPIRED');
    assert.equal((await orderRow(t, due.orderId)).status, 'expired');
    assert.equal((await confirm(t, due.orderId, { paymentId: 'pi_late', amount: 1250, currency: 'USD' })).json().code, 'ORDER_EXPIRED');
    assert.deepEqual((await paymentRows(t, due.orderId)).map((p) => `${p.status}:${p.reason}`), ['refund_due:late']);
    assert.deepEqual(await eventRows(t, due.orderId), ['stored:pending_payment', 'refund_due:pending_payment', 'expired:expired']);
    // The expiry gave the unit back: the voucher's stock is whole again.
    assert.equal((await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', due.voucher.id).executeTakeFirstOrThrow()).stock, 5);

    const cancelled = await newOrder();
    assert.equal((await orderAction(t, 'cancel', cancelled.orderId, cancelled.user)).statusCode, 200);
    const late = await confirm(t, cancelled.orderId, { paymentId: 'pi_c', amount: 1250, currency: 'USD' });
    assert.equal(late.json().code, 'ORDER_CANCELLED');
    assert.equal((await orderRow(t, cancelled.orderId)).status, 'cancelled');
    assert.deepEqual((await paymentRows(t, cancelled.orderId)).map((p) => `${p.status}:${p.reason}`), ['refund_due:late']);
  });

  it('an order nobody has: 404 and nothing kept; bad bodies: 400', async () => {
    const res = await confirm(t, '123456789', { paymentId: 'pi_x', amount: 1, currency: 'USD' });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'ORDER_NOT_FOUND');
    assert.equal((await t.c.db.selectFrom('payments').select('id').where('payment_id', '=', 'pi_x').execute()).length, 0);
    const { orderId } = await newOrder();
    for (const body of [{ paymentId: '', amount: 1, currency: 'USD' }, { paymentId: 'p', amount: 1.5, currency: 'USD' }, { paymentId: 'p', amount: 1, currency: 'US' }, { paymentId: 'p', amount: 1, currency: 'USD', provider: '' }, { paymentId: 'x'.repeat(129), amount: 1, currency: 'USD' }]) {
      assert.equal((await confirm(t, orderId, body)).statusCode, 400, JSON.stringify(body));
    }
    assert.deepEqual(await paymentRows(t, orderId), []);
  });

  it('a free voucher (price 0) still takes a confirmation: amount 0 pays it, anything else is a mismatch; the simulated payment records itself', async () => {
    const free = await newOrder({ price: 0, currency: 'USD' });
    assert.equal((await readOrder(t, free.orderId)).amount, 0);
    assert.equal((await confirm(t, free.orderId, { paymentId: 'free_1', amount: 5, currency: 'USD' })).json().code, 'PAYMENT_MISMATCH');
    const paid = await confirm(t, free.orderId, { paymentId: 'free_2', amount: 0, currency: 'USD' });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().status, 'paid');

    const simulated = await newOrder({ price: 0, currency: 'USD' });
    assert.equal((await orderAction(t, 'pay', simulated.orderId, simulated.user)).statusCode, 200);
    const order = await readOrder(t, simulated.orderId);
    assert.deepEqual({ ...order.payment, at: undefined }, { paymentId: simulated.orderId, provider: 'simulated', amount: 0, currency: 'USD', at: undefined });
  });

  it('a refund with restock of a common voucher gives the unit back to its stock and the buyer; the use cases skip a delivery once() says was applied', async () => {
    const { voucher, orderId, user } = await newOrder();
    assert.equal((await confirm(t, orderId, { paymentId: 'pi_r', amount: 1250, currency: 'USD' })).statusCode, 200);
    const { confirmPayment, refundOrder } = t.c.appDeps.payments;
    assert.deepEqual(await refundOrder(BigInt(orderId), {}, async () => false), { kind: 'replayed' });
    assert.equal((await orderRow(t, orderId)).status, 'paid');
    let onceCalls = 0;
    const refunded = await refundOrder(BigInt(orderId), {}, async () => ++onceCalls > 0);
    assert.equal(refunded.kind, 'refunded');
    assert.equal(onceCalls, 1);
    assert.equal((await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', voucher.id).executeTakeFirstOrThrow()).stock, 5);
    const held = await t.c.db.selectFrom('user_quantities').select('quantity').where('voucher_id', '=', voucher.id).where('user_id', '=', String(user)).executeTakeFirstOrThrow();
    assert.equal(held.quantity, 0);
    const other = await newOrder();
    assert.deepEqual(await confirmPayment({ orderId: BigInt(other.orderId), provider: 'stripe', paymentId: 'pi_once', amount: 1250, currency: 'usd' }, async () => false), { kind: 'replayed' });
    assert.deepEqual(await paymentRows(t, other.orderId), []);
    assert.equal((await confirmPayment({ orderId: 42n, provider: 'stripe', paymentId: 'pi_none', amount: 1, currency: 'USD' })).kind, 'not_found');
  });

  it('an admitted seckill order not stored yet (no pipeline runs here) shows its amount; a payment is ORDER_PROCESSING and kept nowhere, a refund ORDER_NOT_PAID', async () => {
    const v = await createVoucher(t, { stock: 2, price: 700, currency: 'GBP' });
    const res = await claim(t, v.id, 90);
    assert.equal(res.statusCode, 202, res.body);
    const orderId = res.json().orderId;
    const order = await readOrder(t, orderId, await serviceToken(t));
    assert.deepEqual([order.status, order.amount, order.currency], ['processing', 700, 'GBP']);
    const pay = await confirm(t, orderId, { paymentId: 'pi_p', amount: 700, currency: 'GBP' });
    assert.equal(pay.statusCode, 409);
    assert.equal(pay.json().code, 'ORDER_PROCESSING');
    assert.deepEqual(await paymentRows(t, orderId), []);
    const back = await refund(t, orderId);
    assert.equal(back.statusCode, 409);
    assert.equal(back.json().code, 'ORDER_NOT_PAID');
    // Redis still holds the unit for the order (in flight), the database has nothing of it.
    assert.equal((await redisView(t, v.id)).stock, 1);
    assert.equal((await t.c.db.selectFrom('orders').select('id').where('id', '=', orderId).execute()).length, 0);
  });

  it('an admin lists payments newest first, by status and limit; buyers and the service may not', async () => {
    const { orderId } = await newOrder();
    await confirm(t, orderId, { paymentId: 'pi_l1', amount: 1, currency: 'USD' });
    await confirm(t, orderId, { paymentId: 'pi_l2', amount: 2, currency: 'USD' });
    const list = await t.app.inject({ method: 'GET', url: '/api/payments?status=refund_due&limit=2', headers: bearer(await t.admin()) });
    assert.equal(list.statusCode, 200, list.body);
    const payments = list.json().payments;
    assert.deepEqual(payments.map((p: { paymentId: string }) => p.paymentId), ['pi_l2', 'pi_l1']);
    assert.deepEqual({ ...payments[0], at: undefined }, { paymentId: 'pi_l2', orderId, provider: 'shop', amount: 2, currency: 'USD', status: 'refund_due', reason: 'mismatch', at: undefined });
    const applied = await t.app.inject({ method: 'GET', url: '/api/payments?status=applied', headers: bearer(await t.admin()) });
    assert.ok(applied.json().payments.every((p: { status: string }) => p.status === 'applied'));
    const stats = await t.app.inject({ method: 'GET', url: `/api/vouchers/${(await orderRow(t, orderId)).voucher_id}/stats`, headers: bearer(await t.admin()) });
    assert.equal(stats.json().refundDue, 2);
    for (const token of [await t.token(5), await t.c.tokens.sign({ userId: 7n, admin: false, service: true }, 600)]) {
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/payments', headers: bearer(token) })).statusCode, 403);
    }
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/payments?limit=501', headers: bearer(await t.admin()) })).statusCode, 400);
  });
});
