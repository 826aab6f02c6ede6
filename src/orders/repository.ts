import type { Db } from '../infra/db/database.js';
import { type OrderView, orderFromRow } from './order.js';

export interface OrderRepository {
  findById(id: bigint): Promise<OrderView | null>;
}

export function createOrderRepository(db: Db): OrderRepository {
  return {
    async findById(id) {
      const row = await db.selectFrom('orders').selectAll().where('id', '=', id.toString()).executeTakeFirst();
      return row ? orderFromRow(row) : null;
    },
  };
}
