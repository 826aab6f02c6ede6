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

export function createOrderRepository(db: Db): OrderRepository {
  return {
    async findById(id) {
      const row = await db.selectFrom('orders').selectAll().where('id', '=', id.toString()).executeTakeFirst();
      return row ? orderFromRow(row) : null;
    },

    // Served by orders_user_created (user_id, created_at): InnoDB appends the primary key to every
    // secondary index, so the index is in (user_id, created_at, id) order and a backward range scan
    // yields the rows already sorted, no filesort; LIMIT stops it early (PostgreSQL reads the
    // buyer's rows off the index and sorts them). With the voucher filter both databases prefer
    // orders_idempotency (voucher_id, user_id, …) and sort the few rows one user holds on one
    // voucher (test/infra/db/query-plans.test.ts).
    async listByUser(userId, { voucherId, limit }) {
      let query = db.selectFrom('orders').selectAll().where('user_id', '=', userId.toString());
      if (voucherId !== undefined) query = query.where('voucher_id', '=', voucherId.toString());
      const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
      return rows.map(orderFromRow);
    },
  };
}
