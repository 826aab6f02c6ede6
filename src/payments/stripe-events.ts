// Stripe webhook events: verified on the raw bytes with Stripe's own package, then read as what
// they mean to an order. Pure: no store is touched here (stripe-settle.ts acts on the result).
import Stripe from 'stripe';
import { AppError } from '../errors.js';
import { parseId } from '../id-text.js';
import type { PaymentInput } from './payment.js';

/** Stripe's own tolerance: a signature older than this many seconds is refused (replays). */
const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The provider name of every payment confirmed by a Stripe event. */
export const STRIPE_PROVIDER = 'stripe';

/** Longest event id kept (the column's width); Stripe's are far shorter. */
const EVENT_ID_MAX = 255;

/** The part of a verified event this module reads. */
export interface StripeEvent {
  id: string;
  type: string;
  data: { object: unknown };
}

/**
 * The event `rawBody` carries, when `signature` (the Stripe-Signature header) signs exactly those
 * bytes with `secret` within the tolerance. No secret configured: every event is unsigned.
 */
export function verifyStripeEvent(rawBody: unknown, signature: string | string[] | undefined, secret: string): StripeEvent {
  if (secret === '') throw new AppError('INVALID_SIGNATURE', 'Stripe events are refused: STRIPE_WEBHOOK_SECRET is not set');
  if (typeof signature !== 'string' || signature === '') throw new AppError('INVALID_SIGNATURE', 'missing Stripe-Signature header');
  if (!Buffer.isBuffer(rawBody) && typeof rawBody !== 'string') throw new AppError('INVALID_SIGNATURE', 'no signed body');
  let event: StripeEvent;
  try {
    event = Stripe.webhooks.constructEvent(rawBody, signature, secret, SIGNATURE_TOLERANCE_SECONDS);
  } catch (err) {
    // A body Stripe signed that is not JSON is still bad input; anything else failed verification.
    if (err instanceof SyntaxError) throw new AppError('INVALID_REQUEST', 'body: not JSON');
    throw new AppError('INVALID_SIGNATURE', `Stripe signature: ${(err as Error).message}`);
  }
  if (typeof event?.id !== 'string' || event.id === '' || event.id.length > EVENT_ID_MAX || typeof event.type !== 'string') {
    throw new AppError('INVALID_REQUEST', 'body: not a Stripe event (id and type)');
  }
  return event;
}

/** Why a verified event changes nothing (the metric's outcome label). */
export type IgnoreReason = 'other_type' | 'not_paid' | 'bad_metadata' | 'bad_object' | 'partial_refund';

export type StripeAction =
  | { confirm: PaymentInput }
  /** A full refund of the charge of `paymentIntent`, for the order it paid. */
  | { refund: { orderId: bigint; paymentIntent: string } }
  | { ignore: IgnoreReason };

type Fields = Record<string, unknown>;
const isFields = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value);
const isAmount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isId = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= 128;
const isCurrency = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z]{3}$/.test(value);
/** An object's id, whether Stripe sent the id or the object expanded. */
const idOf = (value: unknown): unknown => (isFields(value) ? value.id : value);

/** The order id the shop put in the object's metadata, or null. */
function orderIdOf(object: Fields): bigint | null {
  const metadata = object.metadata;
  return isFields(metadata) && typeof metadata.orderId === 'string' ? parseId(metadata.orderId) : null;
}

/** A payment Stripe reports: its intent's id, the amount and currency received (compared case-insensitively). */
function confirm(object: Fields, paymentId: unknown, amount: unknown): StripeAction {
  const orderId = orderIdOf(object);
  if (orderId === null) return { ignore: 'bad_metadata' };
  const id = idOf(paymentId);
  if (!isId(id) || !isAmount(amount) || !isCurrency(object.currency)) return { ignore: 'bad_object' };
  return { confirm: { orderId, provider: STRIPE_PROVIDER, paymentId: id, amount, currency: object.currency } };
}

/** What a verified event asks of the engine. */
export function stripeAction(event: StripeEvent): StripeAction {
  const object = event.data?.object;
  if (!isFields(object)) return { ignore: 'bad_object' };
  switch (event.type) {
    case 'payment_intent.succeeded':
      return confirm(object, object.id, object.amount_received);
    case 'checkout.session.completed':
      // `unpaid` (a delayed method: an async_payment_succeeded event follows) or `no_payment_required`.
      if (object.payment_status !== 'paid') return { ignore: 'not_paid' };
      return confirm(object, object.payment_intent, object.amount_total);
    case 'charge.refunded': {
      const orderId = orderIdOf(object);
      if (orderId === null) return { ignore: 'bad_metadata' };
      const intent = idOf(object.payment_intent);
      if (!isId(intent) || !isAmount(object.amount) || !isAmount(object.amount_refunded)) return { ignore: 'bad_object' };
      if (object.amount_refunded !== object.amount) return { ignore: 'partial_refund' };
      return { refund: { orderId, paymentIntent: intent } };
    }
    default:
      return { ignore: 'other_type' };
  }
}
