// Stripe as the tests play it: events as Stripe shapes them, signed with the stripe package's own
// test helper, delivered to POST /api/payments/stripe through app.inject.
import Stripe from 'stripe';
import type { TestApp } from './helpers.js';

export const STRIPE_SECRET = 'whsec_test_secret_of_the_tests';

export interface TestEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  data: { object: Record<string, unknown> };
}

const event = (id: string, type: string, object: Record<string, unknown>): TestEvent => ({ id, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object } });

/** A payment intent that succeeded for `orderId`. */
export const intentSucceeded = (id: string, orderId: string, paymentIntent: string, amount: number, currency = 'usd') =>
  event(id, 'payment_intent.succeeded', { id: paymentIntent, object: 'payment_intent', amount, amount_received: amount, currency, status: 'succeeded', metadata: { orderId } });

/** A checkout session completed for `orderId`, paid through `paymentIntent` unless `paymentStatus` says otherwise. */
export const sessionCompleted = (id: string, orderId: string, paymentIntent: string, amount: number, paymentStatus = 'paid', currency = 'usd') =>
  event(id, 'checkout.session.completed', {
    id: `cs_${paymentIntent}`,
    object: 'checkout.session',
    amount_total: amount,
    currency,
    payment_status: paymentStatus,
    payment_intent: paymentIntent,
    metadata: { orderId },
  });

/** The charge of `paymentIntent` refunded (fully unless `refunded` is less than `amount`). */
export const chargeRefunded = (id: string, orderId: string, paymentIntent: string, amount: number, refunded = amount) =>
  event(id, 'charge.refunded', {
    id: `ch_${paymentIntent}`,
    object: 'charge',
    amount,
    amount_refunded: refunded,
    refunded: refunded === amount,
    currency: 'usd',
    payment_intent: paymentIntent,
    metadata: { orderId },
  });

export interface Delivery {
  /** Another secret than the app's, a timestamp (s) of the signature, or no signature at all. */
  secret?: string;
  timestamp?: number;
  unsigned?: boolean;
  /** Bytes other than the ones signed (a body changed on the way). */
  tamper?: boolean;
}

/** POSTs the event as Stripe would: its JSON bytes and their Stripe-Signature. */
export async function deliver(t: TestApp, e: TestEvent, { secret = STRIPE_SECRET, timestamp, unsigned = false, tamper = false }: Delivery = {}) {
  const payload = JSON.stringify(e, null, 2);
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (!unsigned) headers['stripe-signature'] = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
  return t.app.inject({ method: 'POST', url: '/api/payments/stripe', headers, payload: tamper ? payload.replace('"metadata"', '"metadata" ') : payload });
}
