// The shop's payment routes (docs/payments.md): its backend (role service) or an admin confirms a
// payment or refunds an order; an admin lists payments. Routes validate and map outcomes to answers.
import { Type } from 'typebox';
import { type Guards } from '../auth/guards.js';
import { AppError, type ErrorCodeName } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import { OrderBody, type OrderView } from '../orders/order.js';
import { DEFAULT_PAYMENT_LIST_LIMIT, type ListPayments, MAX_PAYMENT_LIST_LIMIT } from './list-payments.js';
import type { ConfirmPayment, PaymentOutcome, RefundOrder, RefundOutcome } from './payment.js';

const ConfirmBody = Type.Object(
  {
    paymentId: Type.String({ minLength: 1, maxLength: 128, format: 'text', description: "the provider's id of the payment; with provider, what makes a payment the same one again" }),
    amount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'minor units paid' }),
    currency: Type.String({ pattern: '^[A-Za-z]{3}$', description: 'ISO 4217, compared case-insensitively' }),
    provider: Type.Optional(Type.String({ minLength: 1, maxLength: 32, format: 'text', default: 'shop' })),
  },
  { additionalProperties: false },
);
const RefundBody = Type.Object({ restock: Type.Optional(Type.Boolean({ description: 'units back on sale while it is open (default true)' })) }, { additionalProperties: false });
const ListQuery = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('refund_due'), Type.Literal('applied')])),
    limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$', description: `most payments returned, 1..${MAX_PAYMENT_LIST_LIMIT} (default ${DEFAULT_PAYMENT_LIST_LIMIT})` })),
  },
  { additionalProperties: false },
);
const PaymentList = Type.Object({
  payments: Type.Array(
    Type.Object({
      paymentId: Type.String(),
      orderId: Type.String(),
      provider: Type.String(),
      amount: Type.Integer(),
      currency: Type.String(),
      status: Type.String(),
      reason: Type.Union([Type.String(), Type.Null()]),
      at: Type.String(),
    }),
  ),
});

const SERVICE = {
  401: 'UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired)',
  403: 'FORBIDDEN: the bearer token has neither the service nor the admin role',
  404: 'ORDER_NOT_FOUND: no order has this id',
} as const;

/** The code of an order's state, when it is what refuses the action. */
const STATE_CODE: Partial<Record<OrderView['status'], ErrorCodeName>> = {
  processing: 'ORDER_PROCESSING',
  pending_payment: 'ORDER_EXPIRED', // a pending order refuses a matching payment only past its deadline
  paid: 'ORDER_PAID',
  cancelled: 'ORDER_CANCELLED',
  expired: 'ORDER_EXPIRED',
  failed: 'ORDER_FAILED',
  refunded: 'ORDER_REFUNDED',
};

const notFound = (id: bigint) => new AppError('ORDER_NOT_FOUND', `order ${id} not found`);

/** The answer of a payment (a replay cannot happen without once()). */
export function paymentAnswer(orderId: bigint, outcome: PaymentOutcome): OrderView {
  switch (outcome.kind) {
    case 'applied':
      return outcome.order;
    case 'refund_due': {
      const { order, reason } = outcome;
      const code = reason === 'mismatch' ? 'PAYMENT_MISMATCH' : STATE_CODE[order.status]!;
      const why = reason === 'mismatch' ? `the order's amount is ${order.amount} ${order.currency}` : `order ${order.id} is ${order.status}`;
      throw new AppError(code, `payment not applied, kept as refund_due (${reason}): ${why}`, { reason });
    }
    case 'processing':
      throw new AppError('ORDER_PROCESSING', `order ${orderId} is not stored yet; retry shortly`);
    default:
      throw notFound(orderId);
  }
}

export function refundAnswer(orderId: bigint, outcome: RefundOutcome): OrderView {
  switch (outcome.kind) {
    case 'refunded':
      return outcome.order;
    case 'not_paid':
      throw new AppError('ORDER_NOT_PAID', `order ${orderId} is ${outcome.order.status}, not paid`);
    case 'refused':
      throw new AppError(STATE_CODE[outcome.order.status]!, `order ${orderId} is ${outcome.order.status}`);
    default:
      throw notFound(orderId);
  }
}

export interface PaymentRouteDeps {
  guards: Guards;
  confirmPayment: ConfirmPayment;
  refundOrder: RefundOrder;
  listPayments: ListPayments;
}

export function registerPaymentRoutes(app: App, { guards, confirmPayment, refundOrder, listPayments }: PaymentRouteDeps) {
  app.post(
    '/api/orders/:id/payments',
    {
      onRequest: guards.service,
      schema: {
        tags: ['payments'],
        summary: "Confirm a payment of an order (the shop's backend); idempotent on (provider, paymentId)",
        params: IdParams,
        body: ConfirmBody,
        response: {
          200: OrderBody,
          ...apiErrorAnswers({
            ...ANSWER.body,
            ...SERVICE,
            409:
              'ORDER_PROCESSING: not stored yet, retry (nothing kept); ORDER_EXPIRED · ORDER_CANCELLED · ORDER_FAILED (late) · ORDER_PAID · ORDER_REFUNDED (duplicate) · PAYMENT_MISMATCH: not applied, the payment kept as refund_due with `reason`',
          }),
        },
      },
    },
    async (request) => {
      const orderId = BigInt(request.params.id);
      const { paymentId, amount, currency, provider = 'shop' } = request.body;
      return paymentAnswer(orderId, await confirmPayment({ orderId, paymentId, amount, currency, provider }));
    },
  );

  app.post(
    '/api/orders/:id/refund',
    {
      onRequest: guards.service,
      schema: {
        tags: ['payments'],
        summary: 'Refund a paid order; its units back on sale unless restock is false (idempotent)',
        params: IdParams,
        body: Type.Optional(RefundBody),
        response: {
          200: OrderBody,
          ...apiErrorAnswers({
            ...ANSWER.body,
            ...SERVICE,
            409: 'ORDER_NOT_PAID: pending_payment or processing; ORDER_CANCELLED · ORDER_EXPIRED · ORDER_FAILED: never paid',
          }),
        },
      },
    },
    async (request) => {
      const orderId = BigInt(request.params.id);
      return refundAnswer(orderId, await refundOrder(orderId, { restock: request.body?.restock ?? true }));
    },
  );

  app.get(
    '/api/payments',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['payments'],
        summary: 'Payments, newest first; ?status=refund_due lists the money to give back',
        querystring: ListQuery,
        response: { 200: PaymentList, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin }) },
      },
    },
    async (request) => {
      const { status, limit } = request.query;
      return { payments: await listPayments({ ...(status ? { status } : {}), ...(limit ? { limit: Number(limit) } : {}) }) };
    },
  );
}
