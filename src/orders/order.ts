import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import type { OrdersTable } from '../infra/db/types.js';
import type { InflightOrder } from '../infra/redis/records.js';

export type OrderStatus = 'processing' | OrdersTable['status'];

/** The payment that paid an order (payments/). */
export interface OrderPayment {
  paymentId: string;
  provider: string;
  amount: number;
  currency: string;
  at: string;
}

export interface OrderView {
  id: string;
  voucherId: string;
  userId: string;
  quantity: number;
  status: OrderStatus;
  createdAt: string;
  expiresAt?: string;
  failureReason?: string;
  /** price × quantity, minor units. */
  amount: number;
  currency: string;
  payment?: OrderPayment;
  refundedAt?: string;
}

const PaymentBody = Type.Object({
  paymentId: Type.String(),
  provider: Type.String(),
  amount: Type.Integer(),
  currency: Type.String(),
  at: Type.String(),
});

/** Response schema of an order (docs/api.md). */
export const OrderBody = Type.Object({
  id: Type.String(),
  voucherId: Type.String(),
  userId: Type.String(),
  quantity: Type.Integer(),
  status: Type.String(),
  createdAt: Type.String(),
  expiresAt: Type.Optional(Type.String()),
  failureReason: Type.Optional(Type.String()),
  amount: Type.Integer({ description: 'price × quantity, in minor units of currency' }),
  currency: Type.String(),
  payment: Type.Optional(PaymentBody),
  refundedAt: Type.Optional(Type.String()),
});

/** The applied payment's columns as an order read selects them (null: not paid through a payment record). */
export interface PaymentColumns {
  payment_id: string | null;
  payment_provider: string | null;
  payment_amount: string | null;
  payment_currency: string | null;
  payment_at: Date | null;
}

export function orderFromRow(row: Selectable<OrdersTable> & Partial<PaymentColumns>): OrderView {
  return {
    id: row.id,
    voucherId: row.voucher_id,
    userId: row.user_id,
    quantity: row.quantity,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    ...(row.expires_at ? { expiresAt: row.expires_at.toISOString() } : {}),
    ...(row.failure_reason ? { failureReason: row.failure_reason } : {}),
    amount: Number(row.amount),
    currency: row.currency,
    ...(row.payment_id && row.payment_provider && row.payment_at
      ? { payment: { paymentId: row.payment_id, provider: row.payment_provider, amount: Number(row.payment_amount), currency: row.payment_currency!, at: row.payment_at.toISOString() } }
      : {}),
    ...(row.refunded_at ? { refundedAt: row.refunded_at.toISOString() } : {}),
  };
}

/** ISO 4217's code for "no currency": an order whose voucher does not exist (failed) has no price. */
export const NO_CURRENCY = 'XXX';

/** An admitted order not stored yet; its amount from the voucher's price (fixed at creation). */
export function orderFromInflight(o: InflightOrder, price: { price: number; currency: string }): OrderView {
  return {
    id: o.orderId,
    voucherId: o.voucherId,
    userId: o.userId,
    quantity: o.quantity,
    status: 'processing',
    createdAt: o.createdAt.toISOString(),
    amount: price.price * o.quantity,
    currency: price.currency,
  };
}
