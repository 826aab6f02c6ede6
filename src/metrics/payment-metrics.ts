// Payments: recorded by outcome, and deliveries of Stripe's webhook.
import { Counter, type Registry } from 'prom-client';
import { cachedChildren } from './label-children.js';

export interface PaymentMetrics {
  /** Payments recorded, by outcome: applied, or refund_due's reason (late, duplicate, mismatch). */
  payments: Counter<'outcome'>;
  /** Counts one delivery of POST /api/payments/stripe by what it did (payments/stripe-settle.ts). */
  countStripeEvent(outcome: string): void;
}

/** Payments by outcome, and deliveries of Stripe's webhook by outcome. */
export function paymentMetrics(registry: Registry): PaymentMetrics {
  const payments = new Counter({
    name: 'seckill_payments_total',
    help: 'Payments recorded (a repeated one is not counted again), by outcome: applied, or kept refund_due as late, duplicate or mismatch.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const events = new Counter({
    name: 'seckill_stripe_events_total',
    help:
      'Deliveries of the Stripe webhook by outcome: applied, refund_due, refunded, held (a refund before its payment), replayed, ' +
      'invalid_signature, processing (a payment for an order not stored yet: answered 409, Stripe delivers it again), or why a verified event changed nothing (unknown_order, other_payment, refused, other_type, not_paid, bad_metadata, bad_object, partial_refund).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const outcome = cachedChildren((value) => events.labels(value));
  return { payments, countStripeEvent: (value) => outcome(value).inc() };
}
