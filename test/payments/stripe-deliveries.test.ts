// The table of applied Stripe events and the held refunds, on the real database; and Stripe's
// events for an order the pipeline has not stored (no worker runs in this file).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stripeDeliveries } from '../../src/payments/stripe-deliveries.js';
import { claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { chargeRefunded, deliver, intentSucceeded, STRIPE_SECRET } from '../support/stripe.js';

const t = await startTestApp(suiteScope(), 'stripe-deliv', { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET });
const deliveries = stripeDeliveries(t.c.db);
const record = (eventId: string) => t.c.db.transaction().execute((trx) => deliveries.firstDelivery(trx, eventId, 'payment_intent.succeeded'));

describe('recording a Stripe event with its effect', () => {
  it('when an event is recorded again, then only the first is its first delivery, and ids differing in case are two events', async () => {
    assert.equal(await record('evt_Case'), true);
    assert.equal(await record('evt_Case'), false);
    assert.equal(await record('evt_case'), true);
    assert.equal(await deliveries.wasApplied('evt_Case'), true);
    assert.equal(await deliveries.wasApplied('evt_CASE'), false);
  });

  it('when eight transactions record one id at once, then exactly one is first and the count says eight', async () => {
    const firsts = await Promise.all(Array.from({ length: 8 }, () => record('evt_race')));
    assert.equal(firsts.filter(Boolean).length, 1);
    const row = await t.c.db.selectFrom('stripe_events').select('deliveries').where('event_id', '=', 'evt_race').executeTakeFirstOrThrow();
    assert.equal(Number(row.deliveries), 8);
  });

  it('when the transaction of the effect rolls back, then the event was not applied', async () => {
    await assert.rejects(
      t.c.db.transaction().execute(async (trx) => {
        await deliveries.firstDelivery(trx, 'evt_rolled_back', 'charge.refunded');
        throw new Error('the effect failed');
      }),
      /the effect failed/,
    );
    assert.equal(await deliveries.wasApplied('evt_rolled_back'), false);
    assert.equal(await record('evt_rolled_back'), true);
  });
});

describe('holding a refund until its payment', () => {
  it('when a refund is held twice, then it is kept once, found by its order, and released', async () => {
    const refund = { eventId: 'evt_refund', orderId: '77', paymentIntent: 'pi_77' };
    await deliveries.hold(refund);
    await deliveries.hold(refund);
    assert.deepEqual(await deliveries.heldFor(77n), [refund]);
    assert.deepEqual(await deliveries.heldFor(78n), []);
    await deliveries.release('evt_refund');
    assert.deepEqual(await deliveries.heldFor(77n), []);
  });
});

describe('Stripe events for an order not stored yet', () => {
  it('when its payment arrives, then 409 ORDER_PROCESSING and nothing recorded, so Stripe delivers it again; its refund is held', async () => {
    const v = await createVoucher(t, { stock: 1, price: 100 });
    const admitted = await claim(t, v.id, 5);
    assert.equal(admitted.statusCode, 202);
    const orderId = admitted.json().orderId as string;
    const payment = await deliver(t, intentSucceeded('evt_inflight_pay', orderId, 'pi_inflight', 100));
    assert.equal(payment.statusCode, 409);
    assert.equal(payment.json().code, 'ORDER_PROCESSING');
    assert.equal(await deliveries.wasApplied('evt_inflight_pay'), false);
    assert.equal((await deliver(t, chargeRefunded('evt_inflight_refund', orderId, 'pi_inflight', 100))).json().outcome, 'held');
    assert.deepEqual(await deliveries.heldFor(BigInt(orderId)), [{ eventId: 'evt_inflight_refund', orderId, paymentIntent: 'pi_inflight' }]);
    const metrics = await t.c.metrics.registry.getSingleMetricAsString('seckill_stripe_events_total');
    assert.match(metrics, /outcome="processing"} 1/);
  });
});
