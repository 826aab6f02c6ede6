// What Redis should hold according to the database's snapshot. Orders stored but not yet settled
// are in the snapshot and still in flight in Redis; releases not yet given back are outbox rows
// without a mark in Redis; both are accounted for, so the comparison needs no tolerance for work
// in flight.
import { compensationOf, settlementOfRow } from '../pipeline/settlement.js';
import type { CombinedState } from './segment-window.js';

/** In-flight orders the database already has (committed; their settlement is pending), by order id. */
export type StoredOrders = Map<string, { status: string; failureReason: string | null }>;

/** The snapshot's side: the voucher's stock, its releases not relayed yet, its stored in-flight orders. */
export interface DbSide {
  stock: number;
  outbox: { order_id: string; user_id: string; quantity: number }[];
  stored: StoredOrders;
}

export interface ExpectedState {
  expected: { stock: number; inflightCounter: number };
  /** Per buyer, the units in-flight orders and pending releases add to their database quantity. */
  extra: Map<string, number>;
}

/**
 * What Redis should hold beyond the database's quantities: its stock minus what in-flight orders
 * hold (not stored yet, or stored as failed and not yet compensated), without the releases Redis
 * has not been given yet; and per buyer, the units those orders and releases add to their
 * database quantity.
 */
export function expectedState(d: DbSide, redis: CombinedState, released: Set<string>): ExpectedState {
  let stock = d.stock;
  const extra = new Map<string, number>();
  const hold = (user: string, units: number) => extra.set(user, (extra.get(user) ?? 0) + units);
  for (const o of redis.inflight) {
    const row = d.stored.get(o.orderId);
    const settlement = row && settlementOfRow(row);
    if (settlement?.kind === 'stored') continue; // the database has it already
    hold(o.userId, o.quantity);
    // Not stored yet, or failed and its compensation (settlement.ts) still to come.
    if (!settlement || compensationOf(settlement).restoreStock) stock -= o.quantity;
  }
  for (const row of d.outbox) {
    if (released.has(row.order_id)) continue;
    stock -= row.quantity;
    hold(row.user_id, row.quantity);
  }
  return { expected: { stock, inflightCounter: redis.inflight.length }, extra };
}
