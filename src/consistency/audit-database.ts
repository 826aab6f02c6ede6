// The database side of the audit (audit.ts), read in one snapshot (repeatable read) in statements
// that each read a bounded part of the voucher, added up a page at a time: a voucher of a million
// orders is neither one statement that outlasts DB_STATEMENT_TIMEOUT_MS nor a million rows in
// memory. The pages are ranges of user ids, walked over the two indexes that start with
// (voucher_id, user_id): the quantity rows' primary key and orders_idempotency. Each page holds
// every quantity row and every order of its users, summed by user and status in SQL, so a user's
// units are judged against their row in one page, and an order whose user has no row is met in its
// page like any other.
import type { Transaction } from 'kysely';
import { type Database, ORDER_STATUSES, type StoredOrderStatus } from '../infra/db/types.js';
import { inChunks } from './in-chunks.js';

type Trx = Transaction<Database>;

/** Problems kept per check. */
export const FIRST = 10;
/** Orders whose units are held: unpaid, paid, or refunded without restock (their units stay sold). */
const ACTIVE = new Set<StoredOrderStatus>(['pending_payment', 'paid', 'refunded']);
/**
 * Quantity rows and orders per page. On a voucher of 1,000,000 orders among 10,000,000 (MariaDB,
 * 128 MiB buffer pool, 2 vCPU) a page's statements took 6-90 ms, 177 ms at most, far below
 * DB_STATEMENT_TIMEOUT_MS; the whole audit 20 s, in 600 statements.
 */
const PAGE = 5_000;

/** Keeps the first FIRST problems of a check; one is enough to fail it. */
export function note(problems: string[], problem: string): void {
  if (problems.length < FIRST) problems.push(problem);
}

const increment = (map: Map<string, number>, key: string, by: number) => map.set(key, (map.get(key) ?? 0) + by);

/** Which of `ids` are orders of the voucher, by primary key, IN_CHUNK at a time. */
async function storedAmong(trx: Trx, voucherId: string, ids: string[]): Promise<Set<string>> {
  const stored = new Set<string>();
  for (const chunk of inChunks(ids)) {
    const rows = await trx.selectFrom('orders').select('id').where('voucher_id', '=', voucherId).where('id', 'in', chunk).execute();
    for (const r of rows) stored.add(r.id);
  }
  return stored;
}

/** The databases' order of user ids, on their decimal text (no leading zeros): shorter is smaller. */
const compareUsers = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
/** `a` comes no later than `b` (null: past the last user). */
const atMost = (a: string, b: string | null) => b === null || compareUsers(a, b) <= 0;

/**
 * The voucher's buyers in pages of user ids (after, upper], read over the two indexes that start
 * with (voucher_id, user_id): the quantity rows' primary key and orders_idempotency. A page ends at
 * the `pageSize`-th quantity row or order, whichever comes first, so it reads at most `pageSize`
 * of each (and the rest of one user's orders), and each of its users' orders summed by status.
 */
async function* buyerPages(trx: Trx, voucherId: string, pageSize: number) {
  let after: string | null = null;
  for (;;) {
    const from: string | null = after;
    const rows: { user_id: string; quantity: number }[] = await trx
      .selectFrom('user_quantities')
      .select(['user_id', 'quantity'])
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .orderBy('user_id')
      .limit(pageSize)
      .execute();
    // The user of the pageSize-th order, off the index alone.
    const nthOrder: { user_id: string } | undefined = await trx
      .selectFrom('orders')
      .select('user_id')
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .orderBy('user_id')
      .limit(1)
      .offset(pageSize - 1)
      .executeTakeFirst();
    const lastRow = rows.length === pageSize ? rows[rows.length - 1]!.user_id : null;
    const upper: string | null = nthOrder && atMost(nthOrder.user_id, lastRow) ? nthOrder.user_id : lastRow;
    const orders = await trx
      .selectFrom('orders')
      .select((eb) => [
        'user_id',
        'status',
        eb.fn.countAll().as('n'),
        // A refund with restock gave its units back: they count as not held.
        eb.fn.sum<string | number>(eb.case().when('refund_restocked', '=', true).then(0).else(eb.ref('quantity')).end()).as('units'),
        // The lowest id of the group without a reason (a problem in the failed group only).
        eb.fn.min(eb.case().when(eb.or([eb('failure_reason', 'is', null), eb('failure_reason', '=', '')])).then(eb.ref('id')).end()).as('unreasoned'),
      ])
      .where('voucher_id', '=', voucherId)
      .$if(from !== null, (q) => q.where('user_id', '>', from!))
      .$if(upper !== null, (q) => q.where('user_id', '<=', upper!))
      .groupBy(['user_id', 'status'])
      .orderBy('user_id')
      .execute();
    yield {
      upper,
      rows: rows.filter((r) => atMost(r.user_id, upper)),
      orders: orders.map((o) => ({ userId: o.user_id, status: o.status, n: Number(o.n), units: Number(o.units), unreasoned: o.status === 'failed' ? o.unreasoned : null })),
    };
    if (upper === null) return;
    after = upper;
  }
}

export interface ReadRequest {
  /** Order ids to look up (admitted, in flight). */
  lookup: string[];
  /** The voucher's orders in flight, read before the snapshot. */
  pending: { orderId: string; userId: string }[];
  /** Queue vouchers (I7): fed every buyer with their number of orders, each once, a page at a time. */
  queue: { add(times: Map<string, number>): Promise<void> } | null;
  /** Quantity rows (and orders) per page: PAGE unless given. */
  pageSize?: number;
  drained: boolean;
}

export interface DatabaseSide {
  voucher: { stock: number; initial_stock: number; per_user_limit: number };
  orders: Record<StoredOrderStatus, number>;
  sold: number;
  /** I2: users above the limit; quantity rows that disagree with the active orders. */
  overLimit: string[];
  rowMismatch: string[];
  /** Those of `lookup` stored as orders of the voucher. */
  stored: Set<string>;
  unreasoned: string[];
  releases: number;
}

/** The database side of the checks, in one snapshot. */
export async function readDatabase(trx: Trx, voucherId: string, { lookup, pending, queue, pageSize = PAGE, drained }: ReadRequest): Promise<DatabaseSide | null> {
  const voucher = await trx.selectFrom('vouchers').select(['stock', 'initial_stock', 'per_user_limit']).where('id', '=', voucherId).executeTakeFirst();
  if (!voucher) return null;
  const limit = voucher.per_user_limit;
  const stored = await storedAmong(trx, voucherId, lookup);
  const orders = Object.fromEntries(ORDER_STATUSES.map((s) => [s, 0])) as Record<StoredOrderStatus, number>;
  const side: DatabaseSide = { voucher, orders, sold: 0, overLimit: [], rowMismatch: [], stored, unreasoned: [], releases: 0 };
  // I7 counts an admission in flight and not stored with its buyer's orders: in the buyer's page.
  const inflightUsers = new Map<string, number>();
  for (const o of pending) if (!stored.has(o.orderId)) increment(inflightUsers, o.userId, 1);
  const waiting = [...inflightUsers].sort(([a], [b]) => compareUsers(a, b));
  let next = 0;

  for await (const page of buyerPages(trx, voucherId, pageSize)) {
    const active = new Map<string, number>();
    const times = new Map<string, number>();
    for (const o of page.orders) {
      orders[o.status] += o.n;
      if (ACTIVE.has(o.status)) increment(active, o.userId, o.units);
      increment(times, o.userId, o.n);
      if (o.unreasoned !== null) note(side.unreasoned, `failed order ${o.unreasoned} has no reason`);
    }
    const held = new Map(page.rows.map((r) => [r.user_id, r.quantity]));
    for (const user of [...new Set([...held.keys(), ...active.keys()])].sort(compareUsers)) {
      const [units, row] = [active.get(user) ?? 0, held.get(user) ?? 0];
      if (units > limit) note(side.overLimit, `user ${user} holds ${units} > limit ${limit}`);
      if (row !== units) note(side.rowMismatch, `user ${user}: quantity row ${row}, active orders ${units}`);
      side.sold += units;
    }
    if (!queue) continue;
    for (; next < waiting.length && atMost(waiting[next]![0], page.upper); next++) increment(times, ...waiting[next]!);
    await queue.add(times);
  }

  if (drained) {
    const releases = await trx.selectFrom('release_outbox').select((eb) => eb.fn.countAll().as('n')).where('voucher_id', '=', voucherId).executeTakeFirstOrThrow();
    side.releases = Number(releases.n);
  }
  return side;
}
