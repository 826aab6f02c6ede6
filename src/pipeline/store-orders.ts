// Stores a batch of admitted orders in ONE transaction: the database re-checks everything Redis
// decided (stock, per-user limit) and is the source of truth when they disagree.
//
// For all the batch's vouchers at once, one statement each: lock the voucher rows (in ascending id
// order: a fixed lock order keeps concurrent batches from deadlocking), then the buyers' quantity
// rows; walk each voucher's orders in admission order and accept each one that still fits; then
// one conditional stock update for every voucher's accepted total, one upsert of the per-user
// quantities and one multi-row insert of the orders. Statements per batch, not per voucher: a
// batch of a sale spread over 100 vouchers held ~100 of them, and four statements each made the
// drain fall behind (bench/many-sales). Orders that do not fit are stored as `failed` with a
// reason, so only the truly invalid orders fail and the rest of the batch is not held back. The
// vouchers' order counts move in one statement per batch, which also reads the clock the payment
// windows start at.
import { sql, type Transaction } from 'kysely';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { Database } from '../infra/db/types.js';
import { insertOrdersSql, type OrderRow } from './bulk-sql.js';
import type { OrderEntry } from '../infra/redis/records.js';
import type { EventOutbox, OutboxEvent } from '../orders/event-outbox.js';
import { addOrderCounts } from '../orders/order-counts.js';
import { addHeld, type HeldChange, heldKey, lockHeld } from '../vouchers/held-units.js';
import { takeStock } from '../vouchers/stock.js';
import { NO_CURRENCY } from '../orders/order.js';
import { FailureReason, failedWith, type Settlement, settlementOfRow, STORED } from './settlement.js';

/** What an order costs: its voucher's price (fixed at creation) × its quantity. */
interface Price {
  price: string | number;
  currency: string;
}
const UNPRICED: Price = { price: 0, currency: NO_CURRENCY };

/** The row of one order: pending with its payment window, or failed with its reason. */
function orderRow(e: OrderEntry, price: Price, outcome: { timeout: number } | { reason: string; createdAt?: Date }): OrderRow {
  const isFailed = 'reason' in outcome;
  return {
    id: e.orderId,
    voucherId: e.voucherId,
    userId: e.userId,
    quantity: e.quantity,
    status: isFailed ? 'failed' : 'pending_payment',
    createdAt: (isFailed && outcome.createdAt) || e.createdAt,
    paymentTimeoutSeconds: isFailed ? null : outcome.timeout,
    failureReason: isFailed ? outcome.reason.slice(0, 255) : null,
    amount: Number(price.price) * e.quantity,
    currency: price.currency,
    idempotencyKey: e.idempotencyKey ?? null,
    traceParent: null,
  };
}

/**
 * Rows whose Idempotency-Key another order of the same buyer and voucher holds (or an earlier row
 * of the batch) are stored without it: an order is never refused for its key. Redis replays a key
 * to its first order; only one admitted twice after Redis lost the key's record comes here.
 */
async function dropKeysInUse(trx: Transaction<Database>, rows: OrderRow[]): Promise<void> {
  const keyed = rows.filter((r) => r.idempotencyKey !== null);
  const taken = new Set<string>();
  const keyOf = (voucherId: string | bigint, userId: string, key: string) => `${voucherId}|${userId}|${key}`;
  for (const voucherId of new Set(keyed.map((r) => r.voucherId))) {
    const users = [...new Set(keyed.filter((r) => r.voucherId === voucherId).map((r) => r.userId))];
    const held = await trx
      .selectFrom('orders')
      .select(['user_id', 'idempotency_key'])
      .where('voucher_id', '=', voucherId.toString())
      .where('user_id', 'in', users)
      .where('idempotency_key', 'is not', null)
      .execute();
    for (const h of held) taken.add(keyOf(voucherId, h.user_id, h.idempotency_key!));
  }
  for (const r of keyed) {
    const key = keyOf(r.voucherId, r.userId, r.idempotencyKey!);
    if (taken.has(key)) r.idempotencyKey = null;
    else taken.add(key);
  }
}

/** Sorts entries into admission order (stream ids "ms-seq"), parsing each id once. */
function inAdmissionOrder(entries: OrderEntry[]): OrderEntry[] {
  return entries
    .map((e) => {
      const dash = e.streamId.indexOf('-');
      return { e, ms: Number(e.streamId.slice(0, dash)), seq: Number(e.streamId.slice(dash + 1)) };
    })
    .sort((a, b) => a.ms - b.ms || a.seq - b.seq)
    .map((x) => x.e);
}

async function alreadyStored(trx: Transaction<Database>, entries: OrderEntry[], out: Map<string, Settlement>) {
  const rows = await trx
    .selectFrom('orders')
    .select(['id', 'status', 'failure_reason'])
    .where('id', 'in', entries.map((e) => e.orderId))
    .execute();
  for (const row of rows) {
    out.set(row.id, settlementOfRow({ status: row.status, failureReason: row.failure_reason }));
  }
}

/** Decides and takes the orders of every voucher of the batch; returns the vouchers that exist (their rows locked then). */
async function storeVouchersOrders(trx: Transaction<Database>, byVoucher: Map<bigint, OrderEntry[]>, out: Map<string, Settlement>, rows: OrderRow[]): Promise<Set<bigint>> {
  const ids = [...byVoucher.keys()].sort((a, b) => (a < b ? -1 : 1)).map(String);
  const vouchers = await trx
    .selectFrom('vouchers')
    .select(['id', 'stock', 'per_user_limit', 'payment_timeout_seconds', 'price', 'currency'])
    .where('id', 'in', ids)
    .orderBy('id')
    .forUpdate()
    .execute();
  const found = new Map(vouchers.map((v) => [String(v.id), v]));
  const failRow = (e: OrderEntry, reason: string) => {
    out.set(e.orderId, failedWith(reason));
    rows.push(orderRow(e, found.get(String(e.voucherId)) ?? UNPRICED, { reason }));
  };
  for (const id of ids) {
    if (found.has(id)) continue;
    for (const e of byVoucher.get(BigInt(id))!) failRow(e, `${FailureReason.VOUCHER_NOT_FOUND}: voucher ${id} does not exist`);
  }
  if (found.size === 0) return new Set();

  const held = await lockHeld(trx, [...found.keys()].map((id) => [id, [...new Set(byVoucher.get(BigInt(id))!.map((e) => e.userId))].sort()] as const));
  const taken = new Map<string, number>();
  const added: HeldChange[] = [];
  for (const [id, voucher] of found) {
    let stockLeft = voucher.stock;
    const adds = new Map<string, number>();
    for (const e of inAdmissionOrder(byVoucher.get(BigInt(id))!)) {
      const holds = (held.get(heldKey(id, e.userId)) ?? 0) + (adds.get(e.userId) ?? 0);
      if (holds + e.quantity > voucher.per_user_limit) {
        failRow(e, `${FailureReason.LIMIT_EXCEEDED}: user holds ${holds} of ${voucher.per_user_limit}`);
      } else if (e.quantity > stockLeft) {
        failRow(e, `${FailureReason.SOLD_OUT}: the database had ${stockLeft} unit(s) left`);
      } else {
        stockLeft -= e.quantity;
        adds.set(e.userId, (adds.get(e.userId) ?? 0) + e.quantity);
        out.set(e.orderId, STORED);
        rows.push(orderRow(e, voucher, { timeout: voucher.payment_timeout_seconds }));
      }
    }
    if (stockLeft < voucher.stock) taken.set(id, voucher.stock - stockLeft);
    for (const [userId, quantity] of adds) added.push({ voucherId: id, userId, quantity });
  }
  if (taken.size > 0) {
    await takeStock(trx, taken);
    await addHeld(trx, added);
  }
  return new Set([...found.keys()].map(BigInt));
}

async function insertOrders(trx: Transaction<Database>, rows: OrderRow[], nowMs: number) {
  if (rows.length === 0) return;
  await sql.raw(insertOrdersSql(dialectOf(trx), rows, nowMs)).execute(trx);
}

/**
 * Counts the rows to insert, those of vouchers this batch holds the lock of on their slot 0.
 * Returns the database's clock, read by the count statement: the payment window starts when the
 * order becomes payable (stored), in database time, read once per batch rather than as a SQL
 * expression per row (cheaper to build and send), and without a round trip of its own.
 */
async function countOrders(trx: Transaction<Database>, rows: OrderRow[], locked: Set<bigint>): Promise<number> {
  const change = (r: OrderRow) => ({ voucherId: r.voucherId, status: r.status, by: 1 });
  const first = await addOrderCounts(trx, rows.filter((r) => locked.has(r.voucherId)).map(change), { voucherLocked: true });
  const second = await addOrderCounts(trx, rows.filter((r) => !locked.has(r.voucherId)).map(change), { voucherLocked: false });
  return (first ?? second)?.getTime() ?? 0;
}

/**
 * The events of a row inserted now: `stored` or `failed`, after `promoted` for an order admitted
 * from the waitlist. Written here, in the order's own insert, rather than by the release relay
 * that promoted it: a relay that rolls back after Redis admitted the order cannot lose the event,
 * and the two can never be committed out of order.
 */
function eventsOf(r: OrderRow, promoted: boolean): OutboxEvent[] {
  const order = { orderId: r.id, voucherId: r.voucherId, userId: r.userId, quantity: r.quantity };
  const outcome: OutboxEvent = { ...order, type: r.status === 'failed' ? 'failed' : 'stored', status: r.status, traceParent: r.traceParent };
  return promoted ? [{ ...order, type: 'promoted', status: 'processing', traceParent: r.traceParent }, outcome] : [outcome];
}

export interface StoreOptions {
  /** Store entries not stored yet as failed with this reason (poison). */
  failAll?: string;
  /**
   * Look up which orders are stored already (redelivery) and which keys are taken; without it a
   * stored order, or a key admitted twice, fails the insert.
   */
  checkStored?: boolean;
  /** Where the batch's `promoted` / `stored` / `failed` events go, in its transaction (one INSERT for the batch). */
  eventOutbox?: EventOutbox;
  /** Per traced order, the traceparent its row and events keep (pipeline/batch-spans.ts). */
  traceParents?: Map<string, string>;
}

/**
 * Decides and stores every entry; returns how each order must be settled in Redis.
 * Throws on database errors; the caller retries transient ones with the same entries.
 */
export async function storeOrders(db: Db, entries: OrderEntry[], { failAll, checkStored = true, eventOutbox: outbox, traceParents }: StoreOptions = {}): Promise<Map<string, Settlement>> {
  const out = new Map<string, Settlement>();
  if (entries.length === 0) return out;
  // READ COMMITTED: the voucher row lock already serialises a voucher's batches; the default
  // REPEATABLE READ would also gap-lock missing quantity rows and deadlock neighbouring vouchers.
  await db.transaction().setIsolationLevel('read committed').execute(async (trx) => {
    if (checkStored) await alreadyStored(trx, entries, out);
    const fresh = entries.filter((e) => !out.has(e.orderId));
    const rows: OrderRow[] = [];
    const locked = new Set<bigint>();
    if (failAll) {
      for (const e of fresh) {
        out.set(e.orderId, failedWith(failAll));
        // Now, not the entry's time: a poison entry's fields are exactly what cannot be trusted.
        rows.push(orderRow(e, UNPRICED, { reason: failAll, createdAt: new Date() }));
      }
    } else {
      const byVoucher = new Map<bigint, OrderEntry[]>();
      for (const e of fresh) {
        const list = byVoucher.get(e.voucherId);
        if (list) list.push(e);
        else byVoucher.set(e.voucherId, [e]);
      }
      if (byVoucher.size > 0) for (const id of await storeVouchersOrders(trx, byVoucher, out, rows)) locked.add(id);
    }
    if (checkStored) await dropKeysInUse(trx, rows);
    if (traceParents) for (const r of rows) r.traceParent = traceParents.get(r.id) ?? null;
    await insertOrders(trx, rows, await countOrders(trx, rows, locked));
    // Only orders inserted now: a redelivered order's events were written when it was stored.
    const promoted = new Set(fresh.filter((e) => e.promoted).map((e) => e.orderId));
    await outbox?.write(trx, rows.flatMap((r) => eventsOf(r, promoted.has(r.id))));
  });
  outbox?.committed();
  return out;
}
