// Use cases: a buyer pays for an order, or cancels it. Both answer at once: an order the pipeline
// has not stored yet is ORDER_PROCESSING (the client retries), never a wait on the server. Both are
// idempotent: repeating the action that already happened returns the order again.
import type { Principal } from '../auth/tokens.js';
import { AppError, type ErrorCodeName } from '../errors.js';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { addOrderCounts, moved } from '../orders/order-counts.js';
import type { OrderView } from '../orders/order.js';
import type { Releases } from './releases.js';
import { withOrderSpans } from '../tracing/order-spans.js';

type GetOrder = (caller: Principal, orderId: bigint) => Promise<OrderView>;

const REFUSAL: Partial<Record<OrderView['status'], ErrorCodeName>> = {
  processing: 'ORDER_PROCESSING',
  paid: 'ORDER_PAID',
  cancelled: 'ORDER_CANCELLED',
  expired: 'ORDER_EXPIRED',
  failed: 'ORDER_FAILED',
  refunded: 'ORDER_REFUNDED',
};

function refuse(order: OrderView): never {
  const code = REFUSAL[order.status] ?? 'ORDER_EXPIRED';
  const why = order.status === 'processing' ? 'is not stored yet; retry shortly' : `is ${order.status}`;
  throw new AppError(code, `order ${order.id} ${why}`);
}

/** Only the buyer pays: admins and the shop's backend read others' orders but do not pay them. */
const asOwner = (caller: Principal): Principal => ({ ...caller, admin: false, service: false });
/** The buyer cancels their order, the shop's backend (service) any pending order; not an admin. */
const asCanceller = (caller: Principal): Principal => ({ ...caller, admin: false });

/** The payment record of a simulated payment: the order's own amount, its id as the payment's. */
const SIMULATED_PROVIDER = 'simulated';

export interface OrderActionDeps {
  db: Db;
  getOrder: GetOrder;
  releases: Releases;
  pubsub: OrderPubSub;
  /** The order-event outbox: the `paid` event commits with the payment. */
  eventOutbox?: EventOutbox;
  /** After a payment committed, before the answer (a queue voucher closes its queue once every unit is paid). */
  onPaid?(order: OrderView): Promise<void>;
}

export function payOrderUseCase({ db, getOrder, releases, pubsub: events, eventOutbox: outbox, onPaid }: OrderActionDeps) {
  const { now } = dialectOf(db);
  /**
   * The payment, its count and its `paid` event in one transaction. One conditional update decides
   * a payment racing its deadline: it only changes an unexpired pending order, in database time, on
   * the row the expiry must lock too.
   */
  const markPaid = (caller: Principal, orderId: bigint) =>
    db.transaction().setIsolationLevel('read committed').execute(async (trx) => {
      const id = orderId.toString();
      const userId = caller.userId.toString();
      const paid = await trx
        .updateTable('orders')
        .set({ status: 'paid', paid_at: now })
        .where('id', '=', id)
        .where('user_id', '=', userId)
        .where('status', '=', 'pending_payment')
        .where('expires_at', '>', now)
        .executeTakeFirst();
      if (paid.numUpdatedRows !== 1n) return false;
      const row = await trx.selectFrom('orders').select(['id', 'voucher_id', 'quantity', 'amount', 'currency', 'trace_parent']).where('id', '=', id).executeTakeFirstOrThrow();
      return withOrderSpans('order payment', [row], async (spans) => {
        await trx
          .insertInto('payments')
          .values({ provider: SIMULATED_PROVIDER, payment_id: id, order_id: id, voucher_id: row.voucher_id, amount: row.amount, currency: row.currency, status: 'applied', reason: null })
          .execute();
        await addOrderCounts(trx, moved([row], 'pending_payment', 'paid'), { voucherLocked: false });
        const traceParent = spans.traceParent(id);
        await outbox?.write(trx, [{ type: 'paid', status: 'paid', orderId: id, voucherId: row.voucher_id, userId, quantity: row.quantity, traceParent }]);
        return true;
      });
    });

  return async function payOrder(caller: Principal, orderId: bigint): Promise<OrderView> {
    const paidNow = await markPaid(caller, orderId);
    if (paidNow) outbox?.committed();
    const order = await getOrder(asOwner(caller), orderId);
    if (paidNow) {
      await events.publish([{ type: 'paid', status: 'paid', orderId: order.id, voucherId: order.voucherId, userId: order.userId, quantity: order.quantity }]);
      await onPaid?.(order);
      return order;
    }
    if (order.status === 'paid') return order;
    if (order.status === 'pending_payment') {
      // Past its deadline, not swept yet: expire it now so the answer is final.
      await releases.expireDue({ limit: 1, orderId });
      throw new AppError('ORDER_EXPIRED', `order ${order.id} expired at ${order.expiresAt}`);
    }
    refuse(order);
  };
}

export function cancelOrderUseCase({ getOrder, releases }: Pick<OrderActionDeps, 'getOrder' | 'releases'>) {
  return async function cancelOrder(caller: Principal, orderId: bigint): Promise<OrderView> {
    const owner = asCanceller(caller);
    let order = await getOrder(owner, orderId);
    if (order.status === 'pending_payment') {
      await releases.cancel(orderId, BigInt(order.userId));
      order = await getOrder(owner, orderId); // cancelled, or paid/expired by a racing request
    }
    if (order.status === 'cancelled') return order;
    refuse(order);
  };
}
