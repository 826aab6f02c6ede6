import type { Selectable } from 'kysely';
import { Type } from 'typebox';
import type { OrdersTable } from '../infra/db/types.js';
import type { InflightOrder } from '../infra/redis/records.js';

export type OrderStatus = 'processing' | OrdersTable['status'];

export interface OrderView {
  id: string;
  voucherId: string;
  userId: string;
  quantity: number;
  status: OrderStatus;
  createdAt: string;
  expiresAt?: string;
  failureReason?: string;
}

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
});

export function orderFromRow(row: Selectable<OrdersTable>): OrderView {
  return {
    id: row.id,
    voucherId: row.voucher_id,
    userId: row.user_id,
    quantity: row.quantity,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    ...(row.expires_at ? { expiresAt: row.expires_at.toISOString() } : {}),
    ...(row.failure_reason ? { failureReason: row.failure_reason } : {}),
  };
}

export function orderFromInflight(o: InflightOrder): OrderView {
  return {
    id: o.orderId,
    voucherId: o.voucherId,
    userId: o.userId,
    quantity: o.quantity,
    status: 'processing',
    createdAt: o.createdAt.toISOString(),
  };
}
