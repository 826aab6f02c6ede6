import type { Db } from '../infra/db/database.js';
import { type OrderView, orderFromRow } from './order.js';

export interface ListByUserOptions {
  voucherId?: bigint;
  limit: number;
}

export interface OrderRepository {
  findById(id: bigint): Promise<OrderView | null>;
  /** Stored orders of one user, newest first (created_at desc, then id desc). */
  listByUser(userId: bigint, options: ListByUserOptions): Promise<OrderView[]>;
}

/** Orders with the payment applied to them, if any (at most one: payments/confirm-payment.ts). */
export function ordersWithPayment(db: Pick<Db, 'selectFrom'>) {
  return db
    .selectFrom('orders')
    .leftJoin('payments', (join) => join.onRef('payments.order_id', '=', 'orders.id').on('payments.status', '=', 'applied'))
    .selectAll('orders')
    .select([
      'payments.payment_id as payment_id',
      'payments.provider as payment_provider',
      'payments.amount as payment_amount',
      'payments.currency as payment_currency',
      'payments.created_at as payment_at',
    ]);
}

export function createOrderRepository(db: Db): OrderRepository {
  return {
    async findById(id) {
      const row = await ordersWithPayment(db).where('orders.id', '=', id.toString()).executeTakeFirst();
      return row ? orderFromRow(row) : null;
    },

    // Served by orders_user_created (user_id, created_at): InnoDB appends the primary key to every
    // secondary index, so the index is in (user_id, created_at, id) order and a backward range scan
    // yields the rows already sorted, no filesort; LIMIT stops it early (PostgreSQL reads the
    // buyer's rows off the index and sorts them). With the voucher filter both databases prefer
    // orders_idempotency (voucher_id, user_id, …) and sort the few rows one user holds on one
    // voucher (test/infra/db/query-plans.test.ts). The payments are joined by their order index.
    async listByUser(userId, { voucherId, limit }) {
      let query = ordersWithPayment(db).where('orders.user_id', '=', userId.toString());
      if (voucherId !== undefined) query = query.where('orders.voucher_id', '=', voucherId.toString());
      const rows = await query.orderBy('orders.created_at', 'desc').orderBy('orders.id', 'desc').limit(limit).execute();
      return rows.map(orderFromRow);
    },
  };
}
