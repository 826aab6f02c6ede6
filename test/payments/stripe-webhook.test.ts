// POST /api/payments/stripe on the real stores: events signed by the stripe package's own helper,
// delivered again, out of order and forged; each test reads the orders, the payments, the applied
// events and the stock of both stores.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { burst, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';
import { chargeRefunded, deliver, intentSucceeded, sessionCompleted, STRIPE_SECRET } from '../support/stripe.js';
import { waitFor } from '../../support/wait.js';

const PRICE = 1_250;
const t = await startTestApp(suiteScope(), 'stripe-hook', { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET, EXPIRY_POLL_MS: '100' });
await t.c.startWorkers();

const statusOf = async (orderId: string) => (await t.c.db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow()).status;
const paymentsOf = (orderId: string) =>
  t.c.db.selectFrom('payments').select(['provider', 'payment_id', 'status', 'reason', 'amount']).where('order_id', '=', orderId).orderBy('payment_id').execute();
const appliedEvents = async (ids: string[]) => (await t.c.db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', ids).execute()).length;
const outboxEmpty = async () => (await t.c.db.selectFrom('release_outbox').select('order_id').execute()).length === 0;

/** A sale of `stock` units at PRICE whose `buyers` each hold one stored, pending order; returns their order ids. */
async function sale(stock: number, buyers: number[], paymentTimeoutSeconds = 600) {
  const v = await createVoucher(t, { stock, price: PRICE, currency: 'USD', paymentTimeoutSeconds });
  const admitted = await burst(t, v.id, buyers);
  assert.equal(admitted.length, buyers.length);
  await waitForDrain(t.c, v.id);
  return { v, admitted };
}

let nextEvent = 0;
const eventId = () => `evt_${process.pid}_${++nextEvent}`;

describe('Stripe signatures', () => {
  it('when the signature is missing, forged, stale or signs other bytes, then 400 INVALID_SIGNATURE and nothing changed', async () => {
    const { admitted: [order] } = await sale(2, [10]);
    const id = eventId();
    const payment = intentSucceeded(id, order!, 'pi_forged', PRICE);
    const stale = Math.floor(Date.now() / 1000) - 301;
    for (const how of [{ unsigned: true }, { secret: 'whsec_not_the_shops' }, { timestamp: stale }, { tamper: true }]) {
      const res = await deliver(t, payment, how);
      assert.equal(res.statusCode, 400, `${JSON.stringify(how)}: ${res.body}`);
      assert.equal(res.json().code, 'INVALID_SIGNATURE');
    }
    assert.equal(await statusOf(order!), 'pending_payment');
    assert.deepEqual(await paymentsOf(order!), []);
    assert.equal(await appliedEvents([id]), 0);
  });

  it('when an event is larger than the API\'s 16 KiB, then it is read up to 256 KiB, and the global JSON parsing is untouched', async () => {
    const padded = (bytes: number) => ({ ...intentSucceeded(eventId(), '987654321', 'pi_big', PRICE), padding: 'x'.repeat(bytes) });
    const big = await deliver(t, padded(40_000));
    assert.equal(big.statusCode, 200, big.body);
    assert.equal((await deliver(t, padded(300_000))).statusCode, 413);
    const elsewhere = await t.app.inject({ method: 'POST', url: '/api/vouchers', headers: { authorization: `Bearer ${await t.admin()}` }, payload: { title: 'x'.repeat(20_000) } });
    assert.equal(elsewhere.statusCode, 413, 'other routes keep 16 KiB');
    const parsed = await t.app.inject({ method: 'POST', url: '/api/vouchers', headers: { authorization: `Bearer ${await t.admin()}` }, payload: { title: 'x' } });
    assert.equal(parsed.statusCode, 400, 'other routes still parse JSON (and validate it)');
    assert.match(parsed.json().message, /body/);
  });
});

describe('Stripe payments', () => {
  it('when a payment intent succeeded is delivered five times at once and again later, then it is applied once', async () => {
    const { admitted: [order] } = await sale(2, [20]);
    const event = intentSucceeded(eventId(), order!, 'pi_once', PRICE);
    const answers = await Promise.all(range(0, 5).map(() => deliver(t, event)));
    const outcomes = answers.map((r) => (assert.equal(r.statusCode, 200, r.body), r.json().outcome as string)).sort();
    assert.deepEqual(outcomes, ['applied', 'replayed', 'replayed', 'replayed', 'replayed']);
    assert.equal((await deliver(t, event)).json().outcome, 'replayed');
    assert.equal(await statusOf(order!), 'paid');
    assert.deepEqual(await paymentsOf(order!), [{ provider: 'stripe', payment_id: 'pi_once', status: 'applied', reason: null, amount: String(PRICE) }]);
    const read = await t.app.inject({ url: `/api/orders/${order}`, headers: { authorization: `Bearer ${await t.token(20)}` } });
    assert.equal(read.json().payment.paymentId, 'pi_once');
  });

  it('when a checkout session completes paid, then its payment intent pays the order; unpaid, nothing changes', async () => {
    const { admitted: [paid, unpaid] } = await sale(3, [30, 31]);
    assert.equal((await deliver(t, sessionCompleted(eventId(), unpaid!, 'pi_unpaid', PRICE, 'unpaid'))).json().outcome, 'not_paid');
    assert.equal((await deliver(t, sessionCompleted(eventId(), paid!, 'pi_session', PRICE))).json().outcome, 'applied');
    // Stripe sends the intent's own event too: the same payment, nothing more.
    const intent = await deliver(t, intentSucceeded(eventId(), paid!, 'pi_session', PRICE));
    assert.equal(intent.statusCode, 200);
    assert.equal(await statusOf(paid!), 'paid');
    assert.equal(await statusOf(unpaid!), 'pending_payment');
    assert.deepEqual((await paymentsOf(paid!)).map((p) => [p.payment_id, p.status]), [['pi_session', 'applied']]);
    assert.deepEqual(await paymentsOf(unpaid!), []);
  });

  it('when an event names no order of the engine, then 200 unknown_order, nothing stored, and the metric counts it', async () => {
    const res = await deliver(t, intentSucceeded(eventId(), '987654321987', 'pi_unknown', PRICE));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().outcome, 'unknown_order');
    assert.equal((await t.c.db.selectFrom('payments').select('payment_id').where('payment_id', '=', 'pi_unknown').execute()).length, 0);
    const other = await deliver(t, { ...intentSucceeded(eventId(), '1', 'pi_x', 1), type: 'customer.created' });
    assert.equal(other.json().outcome, 'other_type');
    const metrics = await t.c.metrics.registry.getSingleMetricAsString('seckill_stripe_events_total');
    assert.match(metrics, /outcome="unknown_order"} [1-9]/);
    assert.match(metrics, /outcome="other_type"} [1-9]/);
  });

  it('when the amount is not the order\'s, then the payment is kept refund_due (mismatch) and the order still waits; the right one then pays it', async () => {
    const { admitted: [order] } = await sale(2, [40]);
    assert.equal((await deliver(t, intentSucceeded(eventId(), order!, 'pi_short', PRICE - 1))).json().outcome, 'refund_due');
    assert.equal(await statusOf(order!), 'pending_payment');
    assert.equal((await deliver(t, intentSucceeded(eventId(), order!, 'pi_right', PRICE, 'USD'))).json().outcome, 'applied');
    assert.deepEqual((await paymentsOf(order!)).map((p) => [p.payment_id, p.status, p.reason]), [['pi_right', 'applied', null], ['pi_short', 'refund_due', 'mismatch']]);
  });
});

describe('Stripe refunds', () => {
  it('when the charge that paid an order is fully refunded, then the order is refunded and its unit is back on sale in both stores', async () => {
    const { v, admitted } = await sale(3, [50, 51]);
    const [order, other] = admitted as [string, string];
    await deliver(t, intentSucceeded(eventId(), order, 'pi_refund', PRICE));
    await deliver(t, intentSucceeded(eventId(), other, 'pi_kept', PRICE));
    assert.equal((await deliver(t, chargeRefunded(eventId(), order, 'pi_refund', PRICE, PRICE - 100))).json().outcome, 'partial_refund');
    assert.equal(await statusOf(order), 'paid');
    const refund = chargeRefunded(eventId(), order, 'pi_refund', PRICE);
    assert.equal((await deliver(t, refund)).json().outcome, 'refunded');
    assert.equal((await deliver(t, refund)).json().outcome, 'replayed');
    assert.equal(await statusOf(order), 'refunded');
    await waitFor('the units to be back in Redis', outboxEmpty);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 2, 'the refunded unit is on sale again');
    assert.equal(truth.redisStock, 2);
  });

  it('when a refund arrives before its payment, then it is held, and the payment leaves the order refunded, not paid', async () => {
    const { v, admitted } = await sale(2, [60]);
    const [order] = admitted as [string];
    const refund = chargeRefunded(eventId(), order, 'pi_early', PRICE);
    assert.equal((await deliver(t, refund)).json().outcome, 'held');
    assert.equal((await deliver(t, refund)).json().outcome, 'held', 'held again, kept once');
    assert.equal(await statusOf(order), 'pending_payment');
    assert.equal((await deliver(t, intentSucceeded(eventId(), order, 'pi_early', PRICE))).json().outcome, 'applied');
    assert.equal(await statusOf(order), 'refunded');
    assert.equal((await deliver(t, refund)).json().outcome, 'replayed');
    assert.equal((await t.c.db.selectFrom('stripe_held_refunds').select('event_id').where('order_id', '=', order).execute()).length, 0);
    await waitFor('the units to be back in Redis', outboxEmpty);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 2);
  });

  it('when a refund of a payment the order did not take arrives, before or after it, then the order stays paid by the other', async () => {
    const { admitted } = await sale(3, [70, 71]);
    const [order, late] = admitted as [string, string];
    // pi_dup's refund first, then the two payments: pi_first pays, pi_dup is a duplicate.
    assert.equal((await deliver(t, chargeRefunded(eventId(), order, 'pi_dup', PRICE))).json().outcome, 'held');
    assert.equal((await deliver(t, intentSucceeded(eventId(), order, 'pi_first', PRICE))).json().outcome, 'applied');
    assert.equal((await deliver(t, intentSucceeded(eventId(), order, 'pi_dup', PRICE))).json().outcome, 'refund_due');
    assert.equal((await deliver(t, chargeRefunded(eventId(), order, 'pi_dup', PRICE))).json().outcome, 'other_payment');
    assert.equal(await statusOf(order), 'paid');
    assert.equal((await t.c.db.selectFrom('stripe_held_refunds').select('event_id').where('order_id', '=', order).execute()).length, 0);
    // A cancelled order: its payment comes late (refund_due), its refund before or after changes nothing.
    const cancel = await t.app.inject({ method: 'POST', url: `/api/orders/${late}/cancel`, headers: { authorization: `Bearer ${await t.token(71)}` } });
    assert.equal(cancel.statusCode, 200);
    assert.equal((await deliver(t, chargeRefunded(eventId(), late, 'pi_late', PRICE))).json().outcome, 'held');
    assert.equal((await deliver(t, intentSucceeded(eventId(), late, 'pi_late', PRICE))).json().outcome, 'refund_due');
    assert.equal(await statusOf(late), 'cancelled');
    assert.deepEqual((await paymentsOf(late)).map((p) => [p.status, p.reason]), [['refund_due', 'late']]);
  });

  it('when a payment, its refund and their replays arrive in every order at once, then each order ends refunded', async () => {
    const buyers = range(80, 6);
    const { v, admitted } = await sale(6, buyers);
    await Promise.all(
      admitted.map(async (order, i) => {
        const pi = `pi_shuffled_${i}`;
        const events = [intentSucceeded(eventId(), order, pi, PRICE), sessionCompleted(eventId(), order, pi, PRICE), chargeRefunded(eventId(), order, pi, PRICE)];
        // Each event twice, in an order of its own per buyer (i rotates and reverses).
        const sequence = [...events, ...events].map((e, k, all) => all[(k + i) % all.length]!);
        if (i % 2) sequence.reverse();
        await Promise.all(sequence.map((e) => deliver(t, e).then((r) => assert.equal(r.statusCode, 200, r.body))));
      }),
    );
    for (const order of admitted) assert.equal(await statusOf(order), 'refunded', `order ${order}`);
    await waitFor('the units to be back in Redis', outboxEmpty);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.dbStock, 6);
    assert.equal((await readTruth(t.c, v.id)).redisStock, 6);
  });
});
