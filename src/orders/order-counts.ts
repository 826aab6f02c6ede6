// Each voucher's orders by status, kept in the transactions that store orders or change their
// status, so reading them costs the same at ten orders or ten million (console/stats.ts).
//
// A count is the sum of its rows over slots. Writers that hold the voucher's row lock anyway (the
// pipeline, SQL claims, releases) add to slot 0, which that lock already serialises. Writers that
// lock no voucher row (a payment, an order failed without its voucher) add to one of SPREAD_SLOTS
// slots picked at random: a payment never waits for a batch holding the voucher, and concurrent
// payments of a hot voucher rarely for each other. With batches holding the voucher row as the
// pipeline does, 10 concurrent payments of one voucher ran at 0.21-0.48 of their rate without a
// count when counting on the voucher row, 0.48-1.08 on one row of their own, 0.76-1.41 (the
// noise) over 8 slots. One slot's count of a status may be negative (an order counted pending in
// slot 0, paid in slot 3); the sums are exact.
import { sql, type Transaction } from 'kysely';
import { dialectOf } from '../infra/db/dialect.js';
import { type Database, ORDER_STATUSES, type StoredOrderStatus } from '../infra/db/types.js';

const SPREAD_SLOTS = 8;

export interface CountChange {
  voucherId: string | bigint;
  status: StoredOrderStatus;
  by: number;
}

/** Changes of the same count summed, zeros dropped, in one order for every writer (rows are locked in it). */
function merged(changes: CountChange[]): CountChange[] {
  const sums = new Map<string, CountChange>();
  for (const c of changes) {
    const key = `${c.voucherId}:${c.status}`;
    const sum = sums.get(key);
    if (sum) sum.by += c.by;
    else sums.set(key, { voucherId: c.voucherId.toString(), status: c.status, by: c.by });
  }
  const rank = (c: CountChange) => ORDER_STATUSES.indexOf(c.status);
  return [...sums.values()]
    .filter((c) => c.by !== 0)
    .sort((a, b) => {
      const [va, vb] = [BigInt(a.voucherId), BigInt(b.voucherId)];
      return va < vb ? -1 : va > vb ? 1 : rank(a) - rank(b);
    });
}

/**
 * Adds the changes to the counts, in one statement. `voucherLocked`: the transaction holds the row
 * lock of every voucher in `changes` (and took it before this call). Returns the database's clock
 * at the statement (null when nothing changed): the order pipeline starts its payment windows there
 * and needs no statement of its own to read it.
 */
export async function addOrderCounts(trx: Transaction<Database>, changes: CountChange[], { voucherLocked }: { voucherLocked: boolean }): Promise<Date | null> {
  const rows = merged(changes);
  if (rows.length === 0) return null;
  const slot = voucherLocked ? 0 : 1 + Math.floor(Math.random() * SPREAD_SLOTS);
  const dialect = dialectOf(trx);
  const values = sql.join(rows.map((c) => sql`(${c.voucherId}, ${c.status}, ${slot}, ${c.by})`));
  const { rows: clock } = await sql<{ now: Date }>`insert into voucher_order_counts (voucher_id, status, slot, n) values ${values}
    ${sql.raw(dialect.addOnConflict('voucher_order_counts', ['voucher_id', 'status', 'slot'], 'n'))} returning ${dialect.now} as now`.execute(trx);
  return clock[0]!.now;
}

/** The changes of orders that went from `from` to `to`, one change pair per order. */
export function moved(orders: { voucher_id: string }[], from: StoredOrderStatus, to: StoredOrderStatus): CountChange[] {
  return orders.flatMap((o) => [
    { voucherId: o.voucher_id, status: from, by: -1 },
    { voucherId: o.voucher_id, status: to, by: 1 },
  ]);
}

/** Rows of (status, sum of n) as the voucher's orders by status (0 for a status it has none of; a null status is no row). */
export function countsByStatus(rows: { status: StoredOrderStatus | null; n: string | number | null }[]): Record<StoredOrderStatus, number> {
  const counts = Object.fromEntries(ORDER_STATUSES.map((s) => [s, 0])) as Record<StoredOrderStatus, number>;
  for (const r of rows) if (r.status !== null) counts[r.status] = Number(r.n);
  return counts;
}
