// Use case: a buyer lists their own orders, newest first. (Being written by a helper.)
import type { Principal } from '../auth/tokens.js';
import type { OrderView } from './order.js';
import type { OrderRepository } from './repository.js';

export interface ListOrdersQuery {
  voucherId?: bigint;
  limit?: number;
}

export function listOrdersUseCase(_deps: { orders: OrderRepository }) {
  return async function listOrders(_caller: Principal, _query: ListOrdersQuery): Promise<OrderView[]> {
    throw new Error('not built yet');
  };
}
