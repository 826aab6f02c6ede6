// Giving units back: an unpaid order that expires, or one its buyer cancels. The status change is
// conditional (only from pending_payment, on a locked row), so a payment racing the deadline either
// wins or loses, never both. In the same transaction the units return to the voucher's stock and the
// buyer's quantity, and seckill releases are written to the outbox: Redis gets them back after the
// commit (release-relay.ts), exactly once even if this process dies in between.
import type { Transaction } from 'kysely';
import type { QuantityChange } from '../infra/db/dialect.js';
import type { Database } from '../infra/db/types.js';
import { VOUCHER_KINDS } from '../vouchers/kinds.js';
import { takeHeld } from '../vouchers/held-units.js';
import { returnStock } from '../vouchers/stock.js';

export type ReleaseStatus = 'expired' | 'cancelled';

/** An order whose row the caller has locked (SELECT ... FOR UPDATE). */
export interface LockedOrder {
  id: string;
  voucher_id: string;
  user_id: string;
  quantity: number;
  /** The traceparent the order keeps (tracing/order-spans.ts); null or absent: untraced. */
  trace_parent?: string | null;
}

const byId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

/** The traceparent of the span that releases an order (tracing/order-spans.ts), null when untraced. */
export type ReleaseTrace = (orderId: string) => string | null;

export async function releaseLocked(trx: Transaction<Database>, orders: LockedOrder[], status: ReleaseStatus, traceOf?: ReleaseTrace): Promise<void> {
  if (orders.length === 0) return;
  const changed = await trx
    .updateTable('orders')
    .set({ status })
    .where('id', 'in', orders.map((o) => o.id))
    .where('status', '=', 'pending_payment')
    .executeTakeFirst();
  if (Number(changed.numUpdatedRows) !== orders.length) throw new Error('a locked pending order changed under its lock');
  await giveBack(trx, orders, traceOf);
}

/**
 * Gives locked orders' units back: to the voucher's stock and the buyer's quantity in SQL, and for
 * seckill vouchers through the release outbox to Redis (waitlist first). An expiry, a cancellation,
 * a refund with restock: one path. The outbox row keeps the releasing span's traceparent, so the
 * relay and the promotion it makes join the released order's trace.
 */
export async function giveBack(trx: Transaction<Database>, orders: LockedOrder[], traceOf?: ReleaseTrace): Promise<void> {
  if (orders.length === 0) return;
  const units = new Map<string, number>();
  const held = new Map<string, QuantityChange>();
  for (const o of orders) {
    units.set(o.voucher_id, (units.get(o.voucher_id) ?? 0) + o.quantity);
    const key = `${o.voucher_id}:${o.user_id}`;
    const h = held.get(key);
    if (h) h.quantity += o.quantity;
    else held.set(key, { voucherId: o.voucher_id, userId: o.user_id, quantity: o.quantity });
  }

  // Vouchers in ascending id order, like the order pipeline, so the two never deadlock.
  const vouchers = await trx
    .selectFrom('vouchers')
    .select(['id', 'kind'])
    .where('id', 'in', [...units.keys()])
    .orderBy('id')
    .forUpdate()
    .execute();
  for (const id of [...units.keys()].sort(byId)) {
    await returnStock(trx, id, units.get(id)!);
  }

  // One statement for every (voucher, user): the rows exist while their orders are active.
  if ((await takeHeld(trx, [...held.values()])) !== held.size) throw new Error('a released order had no per-user quantity row');

  const gated = new Set(vouchers.filter((v) => VOUCHER_KINDS[v.kind].redisGated).map((v) => v.id));
  const outbox = orders.filter((o) => gated.has(o.voucher_id));
  if (outbox.length) {
    await trx
      .insertInto('release_outbox')
      .values(outbox.map((o) => ({ order_id: o.id, voucher_id: o.voucher_id, user_id: o.user_id, quantity: o.quantity, trace_parent: traceOf?.(o.id) ?? null })))
      .execute();
  }
}
