import type { Principal } from '../auth/tokens.js';
import { type Guards, principalOf } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import { OrderBody, type OrderView } from '../orders/order.js';

type OrderAction = (caller: Principal, orderId: bigint) => Promise<OrderView>;

export interface LifecycleRouteDeps {
  guards: Guards;
  payOrder: OrderAction;
  cancelOrder: OrderAction;
}

export function registerLifecycleRoutes(app: App, { guards, payOrder, cancelOrder }: LifecycleRouteDeps) {
  const route = (action: 'pay' | 'cancel', summary: string, run: OrderAction) =>
    app.post(
      `/api/orders/:id/${action}`,
      {
        onRequest: guards.user,
        schema: {
          tags: ['orders'],
          summary,
          params: IdParams,
          response: {
            200: OrderBody,
            ...apiErrorAnswers({
              ...ANSWER.body,
              ...ANSWER.user,
              403: 'FORBIDDEN: pay with PAYMENT_MODE=external (payments come from the shop)',
              404: 'ORDER_NOT_FOUND: no order of yours has this id (an admin acts on its own orders only; the service cancels any)',
              409: 'ORDER_PROCESSING: not stored yet, retry shortly; ORDER_PAID · ORDER_CANCELLED · ORDER_EXPIRED · ORDER_FAILED · ORDER_REFUNDED: the order is already in that state',
            }),
          },
        },
      },
      async (request) => run(principalOf(request), BigInt(request.params.id)),
    );
  route('pay', 'Pay for your order before it expires (simulated payment; idempotent)', payOrder);
  route('cancel', 'Cancel your unpaid order; its units go back on sale (idempotent)', cancelOrder);
}
