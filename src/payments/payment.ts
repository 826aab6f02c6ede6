// The shop's word on money (docs/payments.md): a payment confirmed by its backend or a provider's
// webhook, and what became of it. Routes and webhooks map these outcomes to their answers.
import { sql, type Transaction } from 'kysely';
import { dialectOf } from '../infra/db/dialect.js';
import type { Principal } from '../auth/tokens.js';
import type { Database, RefundReason } from '../infra/db/types.js';
import type { OrderView } from '../orders/order.js';

export interface PaymentInput {
  orderId: bigint;
  provider: string;
  paymentId: string;
  /** Minor units. */
  amount: number;
  /** Compared case-insensitively, stored upper case. */
  currency: string;
}

/** Runs first inside the effect's transaction; resolves false when this delivery was applied before: then nothing changes. */
export type Once = (trx: Transaction<Database>) => Promise<boolean>;

export type PaymentOutcome =
  | { kind: 'applied'; order: OrderView } // applied now or earlier (same provider+paymentId)
  | { kind: 'refund_due'; reason: RefundReason; order: OrderView }
  | { kind: 'processing' }
  | { kind: 'not_found' }
  | { kind: 'replayed' }; // once() said false

export type RefundOutcome =
  | { kind: 'refunded'; order: OrderView }
  | { kind: 'not_paid'; order: OrderView }
  | { kind: 'not_found' }
  | { kind: 'replayed' }
  | { kind: 'refused'; order: OrderView };

export type ConfirmPayment = (input: PaymentInput, once?: Once) => Promise<PaymentOutcome>;
export type RefundOrder = (orderId: bigint, options: { restock?: boolean }, once?: Once) => Promise<RefundOutcome>;

/** Reads any order (the shop's backend acts on every buyer's orders). */
export const SYSTEM: Principal = { userId: 0n, admin: true };

/**
 * Thrown inside a decision's transaction when the order is not stored: it rolls back, so what
 * once() recorded goes too and a later delivery may still apply.
 */
export class OrderMissing extends Error {}

/**
 * Locks the order row a payment or a refund decides on (the row the expiry locks too), with
 * whether its deadline is still ahead in database time. The writes that follow name the row by its
 * id alone: with the state conditions in the UPDATE, MariaDB may walk the (status, expires_at)
 * index instead of the primary key and lock other orders' rows, and two payments of different
 * orders then deadlocked (seen under the payment storm).
 */
export const lockOrder = (trx: Transaction<Database>, orderId: bigint) =>
  trx
    .selectFrom('orders')
    .select(['id', 'voucher_id', 'user_id', 'quantity', 'status', 'amount', 'currency', 'trace_parent'])
    .select(sql<number | boolean>`case when expires_at > ${dialectOf(trx).now} then 1 else 0 end`.as('unexpired'))
    .where('id', '=', orderId.toString())
    .forUpdate()
    .executeTakeFirst();
