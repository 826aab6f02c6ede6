// The Stripe events already applied, and the refunds held until their payment is: the two tables
// of migration 0011. An event id is written in the transaction of its effect, so an event is
// applied once however often, and however concurrently, Stripe delivers it.
import { sql, type Kysely, type Transaction } from 'kysely';
import { dialectOf } from '../infra/db/dialect.js';
import type { Database, PaymentStatus } from '../infra/db/types.js';

export interface HeldRefund {
  eventId: string;
  orderId: string;
  paymentIntent: string;
}

/** A payment of an order as its record says. */
export interface RecordedPayment {
  provider: string;
  paymentId: string;
  status: PaymentStatus;
}

export interface StripeDeliveries {
  /**
   * Records the event in `trx` (the transaction of its effect): true for its first delivery,
   * false when it was applied before. A concurrent delivery of the same id waits on the row
   * until this transaction ends, then sees it.
   */
  firstDelivery(trx: Transaction<Database>, eventId: string, type: string): Promise<boolean>;
  wasApplied(eventId: string): Promise<boolean>;
  /** Keeps a refund for later; the same event held again is kept once. */
  hold(refund: HeldRefund): Promise<void>;
  heldFor(orderId: bigint): Promise<HeldRefund[]>;
  release(eventId: string): Promise<void>;
  /** The payments recorded for the order, which decide what its held refunds do. */
  paymentsOf(orderId: bigint): Promise<RecordedPayment[]>;
}

export function stripeDeliveries(db: Kysely<Database>): StripeDeliveries {
  const dialect = dialectOf(db);
  const addDelivery = sql.raw(dialect.addOnConflict('stripe_events', ['event_id'], 'deliveries'));
  const keep = sql.raw(dialect.keepOnConflict(['event_id']));
  return {
    async firstDelivery(trx, eventId, type) {
      // An upsert counts deliveries; reading the count back works alike on both databases (an
      // INSERT IGNORE's row count is MySQL's own, and mysql2's FOUND_ROWS blurs an upsert's).
      await trx.insertInto('stripe_events').values({ event_id: eventId, type, deliveries: 1 }).modifyEnd(addDelivery).execute();
      const row = await trx.selectFrom('stripe_events').select('deliveries').where('event_id', '=', eventId).executeTakeFirstOrThrow();
      return Number(row.deliveries) === 1;
    },
    async wasApplied(eventId) {
      return (await db.selectFrom('stripe_events').select('event_id').where('event_id', '=', eventId).executeTakeFirst()) !== undefined;
    },
    async hold({ eventId, orderId, paymentIntent }) {
      await db.insertInto('stripe_held_refunds').values({ event_id: eventId, order_id: orderId, payment_intent: paymentIntent }).modifyEnd(keep).execute();
    },
    async heldFor(orderId) {
      const rows = await db
        .selectFrom('stripe_held_refunds')
        .select(['event_id', 'order_id', 'payment_intent'])
        .where('order_id', '=', orderId.toString())
        .orderBy('received_at')
        .execute();
      return rows.map((r) => ({ eventId: r.event_id, orderId: r.order_id, paymentIntent: r.payment_intent }));
    },
    async release(eventId) {
      await db.deleteFrom('stripe_held_refunds').where('event_id', '=', eventId).execute();
    },
    async paymentsOf(orderId) {
      const rows = await db.selectFrom('payments').select(['provider', 'payment_id', 'status']).where('order_id', '=', orderId.toString()).execute();
      return rows.map((r) => ({ provider: r.provider, paymentId: r.payment_id, status: r.status }));
    },
  };
}
