import { Type } from 'typebox';
import type { Principal } from '../auth/tokens.js';
import { type Guards, principalOf } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams, IdString } from '../http.js';
import type { StreamSlots } from '../sse.js';
import { createEventStreams } from './event-stream.js';
import type { OrderPubSub } from './order-pubsub.js';
import { DEFAULT_LIST_LIMIT, type ListOrdersQuery, MAX_LIST_LIMIT } from './list-orders.js';
import { OrderBody, type OrderView } from './order.js';

/** 1..200 as a decimal string: query values are strings and ajv does not coerce (coerceTypes false). */
const LIMIT_PATTERN = '^(?:[1-9][0-9]?|1[0-9]{2}|200)$';

// Unknown query parameters are rejected (400), like unknown body fields.
const ListOrdersQuerystring = Type.Object(
  {
    voucherId: Type.Optional(IdString),
    limit: Type.Optional(
      Type.String({
        pattern: LIMIT_PATTERN,
        description: `most orders returned, an integer 1..${MAX_LIST_LIMIT} (default ${DEFAULT_LIST_LIMIT})`,
      }),
    ),
  },
  { additionalProperties: false },
);
const OrderList = Type.Object({ orders: Type.Array(OrderBody) });
const NoQuery = Type.Object({}, { additionalProperties: false });

export interface OrderRouteDeps {
  guards: Guards;
  getOrder(caller: Principal, orderId: bigint): Promise<OrderView>;
  listOrders(caller: Principal, query: ListOrdersQuery): Promise<OrderView[]>;
  pubsub: OrderPubSub;
  /** The process's event-stream slots, shared with the console's live view. */
  streamSlots: StreamSlots;
}

export function registerOrderRoutes(app: App, { guards, getOrder, listOrders, pubsub: events, streamSlots }: OrderRouteDeps) {
  const streams = createEventStreams(events, { slots: streamSlots });
  // Before the server closes: an open event stream would keep server.close() waiting for ever.
  app.addHook('preClose', async () => streams.closeAll());

  app.get(
    '/api/orders',
    {
      onRequest: guards.user,
      schema: {
        tags: ['orders'],
        summary: 'List your orders, newest first',
        description:
          'Your stored orders, newest first (createdAt, then id, descending), optionally of one voucher. ' +
          'An admitted seckill order is listed once the pipeline has stored it (normally milliseconds); ' +
          'until then it is not listed, and GET /api/orders/:id answers it as `processing`. ' +
          'Unknown query parameters are rejected.',
        querystring: ListOrdersQuerystring,
        response: { 200: OrderList, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.user }) },
      },
    },
    async (request) => {
      const { voucherId, limit } = request.query;
      const orders = await listOrders(principalOf(request), {
        ...(voucherId === undefined ? {} : { voucherId: BigInt(voucherId) }),
        ...(limit === undefined ? {} : { limit: Number(limit) }),
      });
      return { orders };
    },
  );

  // Static segment: find-my-way matches it before /api/orders/:id.
  app.get(
    '/api/orders/events',
    {
      onRequest: guards.user,
      schema: {
        tags: ['orders'],
        summary: 'Server-sent events of your orders',
        description:
          '`text/event-stream`. After the headers: a `: connected` comment (you are subscribed), then per event ' +
          '`event: <type>` and `data: <json>` with type stored, paid, expired, cancelled, failed, promoted, refunded or refund_due and data ' +
          '{type, orderId, voucherId, userId, quantity, status, at}; a `: ping` comment every 15 s. Delivery is at ' +
          'most once (events published while you are not connected are not replayed): poll GET /api/orders to be sure. ' +
          'When your token expires, an `event: token-expired` ({code, message}) and the end of the stream. ' +
          'Past SSE_MAX_PER_USER open streams of yours, or SSE_MAX_STREAMS of this server: 429 TOO_MANY_STREAMS with Retry-After.',
        querystring: NoQuery,
        response: {
          200: {
            description: 'a text/event-stream, until you leave or your token expires',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.user, ...ANSWER.streams }),
        },
      },
    },
    async (request, reply) => {
      await streams.open(request, reply, principalOf(request).userId);
    },
  );

  app.get(
    '/api/orders/:id',
    {
      onRequest: guards.user,
      schema: {
        tags: ['orders'],
        summary: 'Read one of your orders (`processing` until the pipeline has stored it)',
        params: IdParams,
        response: { 200: OrderBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.user, ...ANSWER.orderNotFound }) },
      },
    },
    async (request) => getOrder(principalOf(request), BigInt(request.params.id)),
  );
}
