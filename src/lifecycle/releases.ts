// The two ways an order gives its units back: it expires unpaid, or its buyer cancels it. Both
// commit in SQL (release.ts, and the voucher's order counts), then announce the change and hand
// the units to Redis through the release relay. If the relay fails now, the outbox keeps the units
// for the next drain.
//
// The payment timer is the database itself: pending orders are indexed by (status, expires_at),
// and any number of workers claim the due ones with FOR UPDATE SKIP LOCKED. Nothing to schedule,
// nothing lost when a process dies or Redis forgets its data, and the deadline is compared with
// the database's clock, the same clock `pay` uses, so exactly one of the two wins.
import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { EventOutbox } from '../orders/event-outbox.js';
import { addOrderCounts, moved } from '../orders/order-counts.js';
import type { ReleaseRelay } from './release-relay.js';
import { type LockedOrder, type ReleaseStatus, releaseLocked } from './release.js';
import { withOrderSpans } from '../tracing/order-spans.js';

const COLUMNS = ['id', 'voucher_id', 'user_id', 'quantity', 'trace_parent'] as const;

export interface Releases {
  /** Expires up to `limit` due orders (only `orderId` or only `voucherId`'s, if given); returns how many. */
  expireDue(options: { limit: number; orderId?: bigint; voucherId?: bigint }): Promise<number>;
  /** Cancels a pending order of `userId`; false when the order was not pending. */
  cancel(orderId: bigint, userId: bigint): Promise<boolean>;
}

const eventOf = (status: ReleaseStatus) => (o: LockedOrder) => ({
  type: status, status, orderId: o.id, voucherId: o.voucher_id, userId: o.user_id, quantity: o.quantity,
});

export interface ReleasesDeps {
  db: Db;
  releaseRelay: Pick<ReleaseRelay, 'drain'>;
  pubsub: OrderPubSub;
  log: Logger;
  /** The order-event outbox: the expired / cancelled events commit with the release. */
  eventOutbox?: EventOutbox;
  /** Told how late each expired order was (now − expires_at, database time, seconds), after the commit. */
  expiredLate?(seconds: number[]): void;
}

// A release binds up to 4 parameters per order in one statement (its outbox rows), and PostgreSQL
// takes at most 65,535: larger sweeps (reconciliation's) run as several transactions. The payment
// timer's EXPIRY_BATCH stays within it.
const RELEASES_PER_TRANSACTION = 10_000;

export function createReleases({ db, releaseRelay: relay, pubsub: events, log, eventOutbox: outbox, expiredLate }: ReleasesDeps): Releases {
  const dialect = dialectOf(db);
  // READ COMMITTED: a locking range scan under REPEATABLE READ would also gap-lock the index and
  // hold up the pipeline inserting new pending orders.
  async function release<O extends LockedOrder>(status: ReleaseStatus, lock: (trx: Parameters<typeof releaseLocked>[0]) => Promise<O[]>): Promise<O[]> {
    const orders = await db
      .transaction()
      .setIsolationLevel('read committed')
      .execute(async (trx) => {
        const locked = await lock(trx);
        return withOrderSpans(`order ${status}`, locked, async (spans) => {
          await releaseLocked(trx, locked, status, spans.traceParent);
          // releaseLocked holds the vouchers' rows now.
          await addOrderCounts(trx, moved(locked, 'pending_payment', status), { voucherLocked: true });
          await outbox?.write(trx, locked.map((o) => ({ ...eventOf(status)(o), traceParent: spans.traceParent(o.id) })));
          return locked;
        });
      });
    if (orders.length === 0) return orders;
    outbox?.committed();
    await events.publish(orders.map(eventOf(status)));
    await relay.drain().catch((err: unknown) => log.warn({ err }, 'release relay failed; the outbox keeps the units'));
    return orders;
  }

  /** Expires up to `limit` due orders in one transaction; returns how many. */
  async function expireSome(limit: number, orderId?: bigint, voucherId?: bigint): Promise<number> {
    const expired = await release('expired', (trx) => {
      let due = trx
        .selectFrom('orders')
        .select(COLUMNS)
        // The lateness, read in the same row scan and clock as the deadline check.
        .select(dialect.msBetween(sql.ref('expires_at'), dialect.now).as('late_ms'))
        .where('status', '=', 'pending_payment')
        .where('expires_at', '<=', dialect.now);
      if (orderId !== undefined) due = due.where('id', '=', orderId.toString());
      if (voucherId !== undefined) due = due.where('voucher_id', '=', voucherId.toString());
      return due.orderBy('expires_at').limit(limit).forUpdate().skipLocked().execute();
    });
    if (expired.length) expiredLate?.(expired.map((o) => Math.max(0, Number(o.late_ms)) / 1e3));
    return expired.length;
  }

  return {
    expireDue: async ({ limit, orderId, voucherId }) => {
      let total = 0;
      for (;;) {
        const chunk = Math.min(limit - total, RELEASES_PER_TRANSACTION);
        const expired = await expireSome(chunk, orderId, voucherId);
        total += expired;
        if (expired < chunk || total >= limit) return total;
      }
    },

    cancel: async (orderId, userId) =>
      (await release('cancelled', (trx) =>
        trx
          .selectFrom('orders')
          .select(COLUMNS)
          .where('id', '=', orderId.toString())
          .where('user_id', '=', userId.toString())
          .where('status', '=', 'pending_payment')
          .forUpdate()
          .execute(),
      )).length === 1,
  };
}
