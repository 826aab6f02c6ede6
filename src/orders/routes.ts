import { Type } from 'typebox';
import type { Principal } from '../auth/tokens.js';
import { type Guards, principalOf } from '../auth/guards.js';
import { type App, ErrorBody, IdParams } from '../http.js';
import type { OrderEvents } from './events.js';
import type { ListOrdersQuery } from './list-orders.js';
import type { OrderView } from './order.js';

const OrderBody = Type.Object({
  id: Type.String(),
  voucherId: Type.String(),
  userId: Type.String(),
  quantity: Type.Integer(),
  status: Type.String(),
  createdAt: Type.String(),
  expiresAt: Type.Optional(Type.String()),
  failureReason: Type.Optional(Type.String()),
});

export interface OrderRouteDeps {
  guards: Guards;
  getOrder(caller: Principal, orderId: bigint): Promise<OrderView>;
  listOrders(caller: Principal, query: ListOrdersQuery): Promise<OrderView[]>;
  events: OrderEvents;
}

export function registerOrderRoutes(app: App, { guards, getOrder }: OrderRouteDeps) {
  app.get(
    '/api/orders/:id',
    {
      onRequest: guards.user,
      schema: {
        tags: ['orders'],
        summary: 'Read one of your orders (`processing` until the pipeline has stored it)',
        params: IdParams,
        response: { 200: OrderBody, '4xx': ErrorBody },
      },
    },
    async (request) => getOrder(principalOf(request), BigInt(request.params.id)),
  );
}
