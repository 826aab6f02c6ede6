// Use case: an operator lists payments, newest first (payments_status_id serves the filtered
// listing, the primary key the other): those kept `refund_due` are money the shop must give back.
import type { Db } from '../infra/db/database.js';
import type { PaymentStatus, RefundReason } from '../infra/db/types.js';

export const DEFAULT_PAYMENT_LIST_LIMIT = 100;
export const MAX_PAYMENT_LIST_LIMIT = 500;

export interface PaymentView {
  paymentId: string;
  orderId: string;
  provider: string;
  amount: number;
  currency: string;
  status: PaymentStatus;
  reason: RefundReason | null;
  at: string;
}

export type ListPayments = (query: { status?: PaymentStatus; limit?: number }) => Promise<PaymentView[]>;

export function listPaymentsUseCase(db: Db): ListPayments {
  return async ({ status, limit = DEFAULT_PAYMENT_LIST_LIMIT }) => {
    let query = db.selectFrom('payments').select(['payment_id', 'order_id', 'provider', 'amount', 'currency', 'status', 'reason', 'created_at']);
    if (status) query = query.where('status', '=', status);
    const rows = await query.orderBy('id', 'desc').limit(limit).execute();
    return rows.map((r) => ({
      paymentId: r.payment_id,
      orderId: r.order_id,
      provider: r.provider,
      amount: Number(r.amount),
      currency: r.currency,
      status: r.status,
      reason: r.reason,
      at: r.created_at.toISOString(),
    }));
  };
}

/** A voucher's payments kept `refund_due` (payments_voucher_status): the console shows them. */
export async function refundsDue(db: Db, voucherId: string): Promise<number> {
  const row = await db
    .selectFrom('payments')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('voucher_id', '=', voucherId)
    .where('status', '=', 'refund_due')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
