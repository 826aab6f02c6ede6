// Use case: a buyer lists their own stored orders, newest first. Orders admitted but not stored
// yet (`processing`, in Redis only) are not listed: GET /api/orders/:id answers those.
import type { Principal } from '../auth/tokens.js';
import type { OrderView } from './order.js';
import type { OrderRepository } from './repository.js';

export interface ListOrdersQuery {
  voucherId?: bigint;
  limit?: number;
}

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 200;

export function listOrdersUseCase({ orders }: { orders: OrderRepository }) {
  return async function listOrders(caller: Principal, query: ListOrdersQuery): Promise<OrderView[]> {
    // The route validates 1..200; the clamp keeps other callers inside the same bounds.
    const requested = query.limit !== undefined && Number.isFinite(query.limit) ? Math.trunc(query.limit) : DEFAULT_LIST_LIMIT;
    const limit = Math.min(Math.max(requested, 1), MAX_LIST_LIMIT);
    return orders.listByUser(caller.userId, {
      limit,
      ...(query.voucherId === undefined ? {} : { voucherId: query.voucherId }),
    });
  };
}
