// How an admitted order ends in Redis once the database has decided it, and the compensation
// rule, in one place: an order stored as failed gives the buyer's units back, and the stock too
// unless the database never had that stock (DB_SOLD_OUT: Redis handed out more than there was).
// The order pipeline settles what it stored; reconciliation settles what a lost settle left;
// the exact observation predicts the settlement still to come.
import type { OrderRef } from '../infra/redis/records.js';
import type { SettleInput } from '../infra/redis/scripts/settle.js';

export const FailureReason = {
  /** The database had fewer units than Redis handed out: Redis must not get them back. */
  SOLD_OUT: 'DB_SOLD_OUT',
  LIMIT_EXCEEDED: 'DB_LIMIT_EXCEEDED',
  VOUCHER_NOT_FOUND: 'VOUCHER_NOT_FOUND',
  /** Delivered too many times without being stored. */
  POISON: 'POISON',
} as const;

export type Settlement =
  /** The order holds its units in the database (whatever its status is now): no compensation. */
  | { kind: 'stored' }
  /** The order is stored as failed, with its reason. */
  | { kind: 'failed'; reason: string };

export const STORED: Settlement = { kind: 'stored' };
export const failedWith = (reason: string): Settlement => ({ kind: 'failed', reason });

/** The settlement of an order row already in the database. */
export const settlementOfRow = (row: { status: string; failureReason: string | null }): Settlement =>
  row.status === 'failed' ? failedWith(row.failureReason ?? FailureReason.POISON) : STORED;

export interface Compensation {
  /** Give the units back to Redis stock (the database never took them, but had them). */
  restoreStock: boolean;
  /** Take the units off the buyer's count (the order will never hold them). */
  restoreBuyer: boolean;
}

const NONE: Compensation = { restoreStock: false, restoreBuyer: false };

export function compensationOf(s: Settlement): Compensation {
  if (s.kind === 'stored') return NONE;
  return { restoreBuyer: true, restoreStock: !s.reason.startsWith(FailureReason.SOLD_OUT) };
}

/** The settle script's input for one order (named fields: one object shape, built per order). */
export function settleInput(o: OrderRef, s: Settlement): SettleInput {
  const { restoreStock, restoreBuyer } = compensationOf(s);
  return {
    shard: o.shard,
    streamId: o.streamId,
    orderId: o.orderId,
    voucherId: o.voucherId,
    userId: o.userId,
    quantity: o.quantity,
    restoreStock,
    restoreBuyer,
    failureReason: s.kind === 'failed' ? s.reason : undefined,
  };
}
