// Use case: the shop confirms a payment of an order. One transaction decides it: the order row is
// locked (with its deadline compared in database time), then the payment is looked up by
// (provider, paymentId) — a payment seen before answers as it did then and changes nothing — then
// the order moves to `paid`, or the payment is kept `refund_due` with its reason. The expiry claims
// due orders FOR UPDATE SKIP LOCKED, so a payment racing the deadline is applied or refund_due,
// never both and never neither.
import type { Transaction } from 'kysely';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { Database, RefundReason } from '../infra/db/types.js';
import type { Releases } from '../lifecycle/releases.js';
import type { EventOutbox, OutboxEvent } from '../orders/event-outbox.js';
import type { InflightReader } from '../orders/inflight.js';
import { addOrderCounts, moved } from '../orders/order-counts.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { OrderView } from '../orders/order.js';
import type { OrderRepository } from '../orders/repository.js';
import { type ConfirmPayment, lockOrder, type Once, OrderMissing, type PaymentInput, type PaymentOutcome } from './payment.js';
import { withOrderSpans } from '../tracing/order-spans.js';

export interface PaymentDeps {
  db: Db;
  orders: Pick<OrderRepository, 'findById'>;
  inflight: Pick<InflightReader, 'find'>;
  releases: Pick<Releases, 'expireDue'>;
  pubsub: OrderPubSub;
  eventOutbox?: EventOutbox;
  /** After a payment was applied (a queue voucher closes its queue once every unit is paid). */
  onPaid?(order: OrderView): Promise<void>;
  /** Counts each payment recorded now by its outcome: applied, late, duplicate, mismatch. */
  countPayment?(outcome: string): void;
}

type Trx = Transaction<Database>;
type LockedRow = Awaited<ReturnType<typeof lockOrder>>;

/** What the transaction decided; `now`: whether this call recorded it (false: seen before). */
type Decision =
  | { kind: 'applied' | 'refund_due'; reason: RefundReason | null; orderId: string; now: boolean; pending: boolean }
  | { kind: 'replayed' };

const eventOf = (row: NonNullable<LockedRow>, type: OutboxEvent['type'], status: string, traceParent: string | null): OutboxEvent => ({
  type, status, orderId: row.id, voucherId: row.voucher_id, userId: row.user_id, quantity: row.quantity, traceParent,
});

/** Why a payment cannot pay this order (its row locked, the conditional update refused it). */
function refusal(row: NonNullable<LockedRow>, input: PaymentInput): RefundReason {
  if (row.status === 'paid' || row.status === 'refunded') return 'duplicate';
  if (row.status !== 'pending_payment') return 'late';
  const matches = BigInt(row.amount) === BigInt(input.amount) && row.currency === input.currency;
  return matches ? 'late' : 'mismatch'; // a matching payment refused by a pending order: its deadline passed
}

export function confirmPaymentUseCase(deps: PaymentDeps): ConfirmPayment {
  const { db, orders, inflight, releases, pubsub, eventOutbox: outbox, onPaid, countPayment } = deps;
  const { now } = dialectOf(db);

  async function apply(trx: Trx, row: NonNullable<LockedRow>, input: PaymentInput, traceParent: string | null): Promise<boolean> {
    const payable = row.status === 'pending_payment' && Number(row.unexpired) === 1 && BigInt(row.amount) === BigInt(input.amount) && row.currency === input.currency;
    if (!payable) return false;
    await trx.updateTable('orders').set({ status: 'paid', paid_at: now }).where('id', '=', row.id).execute();
    await addOrderCounts(trx, moved([row], 'pending_payment', 'paid'), { voucherLocked: false });
    await outbox?.write(trx, [eventOf(row, 'paid', 'paid', traceParent)]);
    return true;
  }

  const decide = (input: PaymentInput, once?: Once) =>
    db.transaction().setIsolationLevel('read committed').execute(async (trx): Promise<Decision> => {
      if (once && !(await once(trx))) return { kind: 'replayed' };
      const row = await lockOrder(trx, input.orderId);
      if (!row) throw new OrderMissing();
      // After the lock: a concurrent delivery of the same payment has committed by now.
      const seen = await trx
        .selectFrom('payments')
        .select(['order_id', 'status', 'reason'])
        .where('provider', '=', input.provider)
        .where('payment_id', '=', input.paymentId)
        .executeTakeFirst();
      if (seen) return { kind: seen.status, reason: seen.reason, orderId: seen.order_id, now: false, pending: false };
      return withOrderSpans('order payment', [row], async (spans) => {
        const applied = await apply(trx, row, input, spans.traceParent(row.id));
        const reason = applied ? null : refusal(row, input);
        await trx
          .insertInto('payments')
          .values({
            provider: input.provider, payment_id: input.paymentId, order_id: row.id, voucher_id: row.voucher_id,
            amount: input.amount, currency: input.currency, status: applied ? 'applied' : 'refund_due', reason,
          })
          .execute();
        if (!applied) await outbox?.write(trx, [eventOf(row, 'refund_due', row.status, spans.traceParent(row.id))]);
        return { kind: applied ? 'applied' : 'refund_due', reason, orderId: row.id, now: true, pending: row.status === 'pending_payment' } as const;
      });
    });

  const read = async (orderId: string) => (await orders.findById(BigInt(orderId)))!;

  return async function confirmPayment(given, once) {
    const input = { ...given, currency: given.currency.toUpperCase() };
    for (;;) {
      let decision: Decision;
      try {
        decision = await decide(input, once);
      } catch (err) {
        if (!(err instanceof OrderMissing)) throw err;
        if (await inflight.find(input.orderId)) return { kind: 'processing' };
        // Stored between the lock and the in-flight read: decide again.
        if (await orders.findById(input.orderId)) continue;
        return { kind: 'not_found' };
      }
      if (decision.kind === 'replayed') return decision;
      if (decision.now) {
        outbox?.committed();
        countPayment?.(decision.reason ?? 'applied');
      }
      // A matching payment a pending order refused came after its deadline: expire it now, so the
      // order's state is final and says why.
      if (decision.now && decision.pending && decision.reason === 'late') await releases.expireDue({ limit: 1, orderId: input.orderId });
      const order = await read(decision.orderId);
      const applied = decision.kind === 'applied';
      if (decision.now) {
        const type = applied ? 'paid' : 'refund_due';
        await pubsub.publish([{ type, status: order.status, orderId: order.id, voucherId: order.voucherId, userId: order.userId, quantity: order.quantity }]);
        if (applied) await onPaid?.(order);
      }
      return applied ? { kind: 'applied', order } : ({ kind: 'refund_due', reason: decision.reason!, order } satisfies PaymentOutcome);
    }
  };
}
