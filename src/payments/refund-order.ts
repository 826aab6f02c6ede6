// Use case: the shop refunds a paid order. One transaction on the locked order row: `paid` becomes
// `refunded` (final); with restock, while the sale is open, the units go back on sale through the
// same path as an expiry (lifecycle/release.ts: stock, the buyer's quantity, the release outbox to
// Redis, waitlist first). Without restock, or after the end, they stay sold: the stock and the
// buyer's quantity do not move, so Redis and the database still agree. Refunding again answers the
// refunded order and changes nothing.
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import { giveBack } from '../lifecycle/release.js';
import type { ReleaseRelay } from '../lifecycle/release-relay.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { addOrderCounts, moved } from '../orders/order-counts.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { OrderView } from '../orders/order.js';
import { lockOrder, OrderMissing, type RefundOrder, type RefundOutcome } from './payment.js';
import { withOrderSpans } from '../tracing/order-spans.js';

export interface RefundDeps {
  db: Db;
  /** Any order, stored or in flight (`processing`); null when there is none. */
  findOrder(orderId: bigint): Promise<OrderView | null>;
  releaseRelay: ReleaseRelay;
  pubsub: OrderPubSub;
  log: Logger;
  eventOutbox?: EventOutbox;
}

type Decision = { kind: 'refunded'; now: boolean; restocked: boolean } | { kind: 'not_paid' | 'refused' | 'replayed' };

export function refundOrderUseCase({ db, findOrder, releaseRelay: relay, pubsub, log, eventOutbox: outbox }: RefundDeps): RefundOrder {
  const { now } = dialectOf(db);

  const decide = (orderId: bigint, restock: boolean, once?: Parameters<RefundOrder>[2]) =>
    db.transaction().setIsolationLevel('read committed').execute(async (trx): Promise<Decision> => {
      if (once && !(await once(trx))) return { kind: 'replayed' };
      const row = await lockOrder(trx, orderId);
      if (!row) throw new OrderMissing();
      if (row.status === 'refunded') return { kind: 'refunded', now: false, restocked: false };
      if (row.status === 'pending_payment') return { kind: 'not_paid' };
      if (row.status !== 'paid') return { kind: 'refused' };
      // Back on sale only while someone can still buy it: before the end (database time, the
      // clock of the claims' window in SQL), and not once a queue voucher's queue closed (its
      // waiting places were told so; the voucher takes no other claims).
      const open =
        restock &&
        (await trx
          .selectFrom('vouchers')
          .leftJoin('queue_draws', 'queue_draws.voucher_id', 'vouchers.id')
          .select('vouchers.id')
          .where('vouchers.id', '=', row.voucher_id)
          .where('vouchers.end_at', '>', now)
          .where('queue_draws.closed_at', 'is', null)
          .executeTakeFirst()) !== undefined;
      return withOrderSpans('order refund', [row], async (spans) => {
        await trx.updateTable('orders').set({ status: 'refunded', refunded_at: now, refund_restocked: open }).where('id', '=', row.id).execute();
        if (open) await giveBack(trx, [row], spans.traceParent); // locks the voucher row first
        await addOrderCounts(trx, moved([row], 'paid', 'refunded'), { voucherLocked: open });
        const traceParent = spans.traceParent(row.id);
        await outbox?.write(trx, [{ type: 'refunded', status: 'refunded', orderId: row.id, voucherId: row.voucher_id, userId: row.user_id, quantity: row.quantity, traceParent }]);
        return { kind: 'refunded', now: true, restocked: open } as const;
      });
    });

  return async function refundOrder(orderId, { restock = true }, once): Promise<RefundOutcome> {
    let decision: Decision;
    try {
      decision = await decide(orderId, restock, once);
    } catch (err) {
      if (!(err instanceof OrderMissing)) throw err;
      const order = await findOrder(orderId);
      if (!order) return { kind: 'not_found' };
      // Not stored yet, so not paid; or stored since the lock found nothing: decide again.
      return order.status === 'processing' ? { kind: 'not_paid', order } : refundOrder(orderId, { restock }, once);
    }
    if (decision.kind === 'replayed') return { kind: 'replayed' };
    const order = (await findOrder(orderId))!;
    if (decision.kind !== 'refunded') return { kind: decision.kind, order };
    if (decision.now) {
      outbox?.committed();
      await pubsub.publish([{ type: 'refunded', status: 'refunded', orderId: order.id, voucherId: order.voucherId, userId: order.userId, quantity: order.quantity }]);
      if (decision.restocked) await relay.drain().catch((err: unknown) => log.warn({ err }, 'release relay failed; the outbox keeps the units'));
    }
    return { kind: 'refunded', order };
  };
}
