// The verification and reading of Stripe events, without a store: signatures made by the stripe
// package's own test helper.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Stripe from 'stripe';
import { AppError } from '../../src/errors.js';
import { stripeAction, type StripeEvent, verifyStripeEvent } from '../../src/payments/stripe-events.js';

const SECRET = 'whsec_test_events';

const event = (type: string, object: Record<string, unknown>, id = 'evt_1'): StripeEvent => ({ id, type, data: { object } });
const signed = (payload: string, secret = SECRET, timestamp?: number) => Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof AppError, String(err));
    return err.code;
  }
  return 'no error';
};

describe('verifying a Stripe event on its raw bytes', () => {
  const payload = JSON.stringify(event('payment_intent.succeeded', { id: 'pi_1' }, 'evt_verify'));

  it('when the signature signs the bytes, then the event is read from them', () => {
    const verified = verifyStripeEvent(Buffer.from(payload), signed(payload), SECRET);
    assert.equal(verified.id, 'evt_verify');
    assert.equal(verified.type, 'payment_intent.succeeded');
  });

  it('when the signature is missing, made with another secret, stale, or the bytes changed, then INVALID_SIGNATURE', () => {
    const stale = Math.floor(Date.now() / 1000) - 301;
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), undefined, SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), '', SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), signed(payload, 'whsec_other'), SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), signed(payload, SECRET, stale), SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload.replace('pi_1', 'pi_2')), signed(payload), SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(undefined, signed(payload), SECRET)), 'INVALID_SIGNATURE');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), [signed(payload), signed(payload)], SECRET)), 'INVALID_SIGNATURE');
  });

  it('when no secret is configured, then even an event signed with the empty secret is refused', () => {
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from(payload), signed(payload, ''), '')), 'INVALID_SIGNATURE');
  });

  it('when correctly signed bytes are not a Stripe event, then INVALID_REQUEST', () => {
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from('{"a":'), signed('{"a":'), SECRET)), 'INVALID_REQUEST');
    assert.equal(codeOf(() => verifyStripeEvent(Buffer.from('{"type":"x"}'), signed('{"type":"x"}'), SECRET)), 'INVALID_REQUEST');
  });
});

describe('what a verified event asks of the engine', () => {
  const metadata = { orderId: '42' };

  it('when a payment intent succeeded, then its amount received and currency confirm a stripe payment', () => {
    const action = stripeAction(event('payment_intent.succeeded', { id: 'pi_1', amount_received: 1500, amount: 2000, currency: 'eur', metadata }));
    assert.deepEqual(action, { confirm: { orderId: 42n, provider: 'stripe', paymentId: 'pi_1', amount: 1500, currency: 'eur' } });
  });

  it('when a checkout session completed paid, then its payment intent (id or expanded) and total confirm the payment', () => {
    const session = { id: 'cs_1', payment_status: 'paid', amount_total: 900, currency: 'usd', metadata };
    const expected = { confirm: { orderId: 42n, provider: 'stripe', paymentId: 'pi_9', amount: 900, currency: 'usd' } };
    assert.deepEqual(stripeAction(event('checkout.session.completed', { ...session, payment_intent: 'pi_9' })), expected);
    assert.deepEqual(stripeAction(event('checkout.session.completed', { ...session, payment_intent: { id: 'pi_9' } })), expected);
  });

  it('when a checkout session completed unpaid or without payment, then it is ignored as not paid', () => {
    for (const status of ['unpaid', 'no_payment_required']) {
      assert.deepEqual(stripeAction(event('checkout.session.completed', { payment_status: status, payment_intent: 'pi_1', amount_total: 1, currency: 'usd', metadata })), { ignore: 'not_paid' });
    }
  });

  it('when a charge is fully refunded, then the order is refunded for that payment intent; a partial refund is ignored', () => {
    const charge = { id: 'ch_1', payment_intent: 'pi_1', amount: 700, currency: 'usd', metadata };
    assert.deepEqual(stripeAction(event('charge.refunded', { ...charge, amount_refunded: 700 })), { refund: { orderId: 42n, paymentIntent: 'pi_1' } });
    assert.deepEqual(stripeAction(event('charge.refunded', { ...charge, amount_refunded: 300 })), { ignore: 'partial_refund' });
  });

  it('when the order id in the metadata is missing or not an id, then the event is ignored as bad metadata', () => {
    for (const meta of [undefined, {}, { orderId: 42 }, { orderId: '0' }, { orderId: '9223372036854775808' }, { orderId: '42 ' }]) {
      assert.deepEqual(stripeAction(event('payment_intent.succeeded', { id: 'pi_1', amount_received: 1, currency: 'usd', metadata: meta })), { ignore: 'bad_metadata' });
      assert.deepEqual(stripeAction(event('charge.refunded', { payment_intent: 'pi_1', amount: 1, amount_refunded: 1, metadata: meta })), { ignore: 'bad_metadata' });
    }
  });

  it('when the object lacks its amount, currency or payment intent, then it is ignored as a bad object', () => {
    assert.deepEqual(stripeAction(event('payment_intent.succeeded', { id: 'pi_1', amount_received: -1, currency: 'usd', metadata })), { ignore: 'bad_object' });
    assert.deepEqual(stripeAction(event('payment_intent.succeeded', { id: 'pi_1', amount_received: 1, metadata })), { ignore: 'bad_object' });
    assert.deepEqual(stripeAction(event('payment_intent.succeeded', { id: 'pi_1', amount_received: 1, currency: 'usdt', metadata })), { ignore: 'bad_object' });
    assert.deepEqual(stripeAction(event('checkout.session.completed', { payment_status: 'paid', payment_intent: null, amount_total: 1, currency: 'usd', metadata })), { ignore: 'bad_object' });
    assert.deepEqual(stripeAction(event('charge.refunded', { payment_intent: null, amount: 1, amount_refunded: 1, metadata })), { ignore: 'bad_object' });
    assert.deepEqual(stripeAction({ id: 'evt', type: 'payment_intent.succeeded', data: { object: null } }), { ignore: 'bad_object' });
  });

  it('when the event is of another type, then it is ignored as such', () => {
    assert.deepEqual(stripeAction(event('payment_intent.payment_failed', { id: 'pi_1', metadata })), { ignore: 'other_type' });
  });
});
