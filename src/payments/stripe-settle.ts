// Use case: a verified Stripe event applied to its order, once. Stripe delivers at least once, for
// days, in any order: a payment event confirms the payment (payment use cases), a full refund
// refunds the order it paid. A refund that arrives before its payment is held and applied right
// after that payment: the payment path applies the holds after its commit, the refund path
// applies its hold after writing it, so whichever commits last sees the other's row.
import { AppError } from '../errors.js';
import { isDatabaseUnreachable, isTransientDbError } from '../infra/db/errors.js';
import type { OrderView } from '../orders/order.js';
import type { ConfirmPayment, PaymentInput, RefundOrder, RefundOutcome } from './payment.js';
import type { RecordedPayment, StripeDeliveries } from './stripe-deliveries.js';
import { type IgnoreReason, STRIPE_PROVIDER, stripeAction, type StripeEvent } from './stripe-events.js';

/** What became of a verified event (the metric's outcome label). */
export type StripeOutcome =
  | 'applied'
  | 'refund_due'
  | 'refunded'
  /** A refund whose payment has not arrived: applied right after it. */
  | 'held'
  | 'replayed'
  | 'unknown_order'
  /** A refund of a payment that is not the one the order took (kept refund_due, or never paid it). */
  | 'other_payment'
  /** A refund the order's state refuses. */
  | 'refused'
  | IgnoreReason;

export interface StripeSettleDeps {
  deliveries: StripeDeliveries;
  confirmPayment: ConfirmPayment;
  refundOrder: RefundOrder;
  /** The order as anyone reads it (stored or in flight), null when there is none. */
  findOrder(orderId: bigint): Promise<OrderView | null>;
}

const REFUND_OUTCOME: Record<RefundOutcome['kind'], StripeOutcome> = {
  refunded: 'refunded',
  replayed: 'replayed',
  refused: 'refused',
  not_paid: 'refused',
  not_found: 'unknown_order',
};

/** Tries of a payment or refund whose transaction lost a lock conflict (a deadlock): it rolled back whole, its event id with it. */
const CONFLICT_TRIES = 3;

async function retryingConflicts<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= CONFLICT_TRIES || !isTransientDbError(err) || isDatabaseUnreachable(err)) throw err;
    }
  }
}

export function settleStripeEventUseCase({ deliveries, confirmPayment, refundOrder, findOrder }: StripeSettleDeps) {
  /** Applies or drops the refunds held for the order, as far as its payments allow; the outcome of each. */
  async function settleHeld(orderId: bigint): Promise<Map<string, StripeOutcome>> {
    const outcomes = new Map<string, StripeOutcome>();
    const held = await deliveries.heldFor(orderId);
    if (held.length === 0) return outcomes;
    const payments = await deliveries.paymentsOf(orderId);
    const applied = payments.find((p) => p.status === 'applied');
    for (const refund of held) {
      const ofIntent = (p: RecordedPayment) => p.provider === STRIPE_PROVIDER && p.paymentId === refund.paymentIntent;
      if (applied && ofIntent(applied)) {
        const outcome = await retryingConflicts(() => refundOrder(orderId, { restock: true }, (trx) => deliveries.firstDelivery(trx, refund.eventId, 'charge.refunded')));
        outcomes.set(refund.eventId, REFUND_OUTCOME[outcome.kind]);
      } else if (applied || payments.some(ofIntent)) {
        // The order took another payment, or this one came too late: the refund undoes nothing here.
        outcomes.set(refund.eventId, 'other_payment');
      } else {
        continue; // its payment has not arrived yet
      }
      await deliveries.release(refund.eventId);
    }
    return outcomes;
  }

  async function pay(event: StripeEvent, payment: PaymentInput): Promise<StripeOutcome> {
    const outcome = await retryingConflicts(() => confirmPayment(payment, (trx) => deliveries.firstDelivery(trx, event.id, event.type)));
    // Not stored yet: a non-2xx makes Stripe deliver the event again.
    if (outcome.kind === 'processing') throw new AppError('ORDER_PROCESSING', `order ${payment.orderId} is not stored yet; deliver again`);
    if (outcome.kind === 'not_found') return 'unknown_order';
    // A replay too: the delivery that applied the payment may have stopped before this step.
    await settleHeld(payment.orderId);
    return outcome.kind;
  }

  async function refund(event: StripeEvent, orderId: bigint, paymentIntent: string): Promise<StripeOutcome> {
    if (await deliveries.wasApplied(event.id)) return 'replayed';
    if (!(await findOrder(orderId))) return 'unknown_order';
    await deliveries.hold({ eventId: event.id, orderId: orderId.toString(), paymentIntent });
    return (await settleHeld(orderId)).get(event.id) ?? 'held';
  }

  return async function settleStripeEvent(event: StripeEvent): Promise<StripeOutcome> {
    const action = stripeAction(event);
    if ('confirm' in action) return pay(event, action.confirm);
    if ('refund' in action) return refund(event, action.refund.orderId, action.refund.paymentIntent);
    return action.ignore;
  };
}
