// The webhook outbox's statements (webhook_events, written by orders/event-outbox.ts). No
// transaction is held across a request: take() leases rows in a short transaction by moving their
// due_at past the round (leased_by names the round), the relay sends them, settle() deletes the
// delivered ones and moves the others to their next try. A relay that dies mid-round leaves its
// rows leased: they are taken again when the lease runs out (at least once, never lost).
//
// Per order, in the order things happened: a row is leased only when no earlier row of its order
// is waiting (being sent elsewhere, or waiting for its next try); such a blocked row is put off for
// a lease and woken as soon as its predecessor is delivered or given up, so blocked rows never
// crowd out the due ones.
import { type RawBuilder, sql, type Transaction } from 'kysely';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import { int } from '../infra/db/literals.js';
import type { Database } from '../infra/db/types.js';
import { sendableInOrder } from '../events/event-relay.js';
import type { OutboxRow } from '../events/message.js';

/** A leased row: the event as the RabbitMQ relay reads it, its attempts so far and its age at take(). */
export interface WebhookRow extends OutboxRow {
  attempts: number;
  ageMs: number;
}

export interface Taken {
  /** Due rows this round looked at (at most `batch`). */
  claimed: number;
  /** Rows given up: older than the maximum age. */
  givenUp: number;
  /** The rows this round holds, in id order; per order, the earliest waiting ones. */
  leased: WebhookRow[];
}

export interface TakeOptions {
  batch: number;
  leaseMs: number;
  /** This round's name, written in leased_by. */
  round: string;
  maxAgeSeconds: number;
}

/** What became of a round's rows: delivered (deleted), or back to waiting `waitMs` (failed: counted as an attempt, with its error). */
export interface Settlement {
  delivered: WebhookRow[];
  failed: { row: WebhookRow; error: string; waitMs: number }[];
  untried: { row: WebhookRow; waitMs: number }[];
}

const EVENT_COLUMNS = ['event_id', 'order_id', 'voucher_id', 'user_id', 'type', 'quantity', 'status', 'created_at', 'attempts', 'last_error', 'trace_parent'] as const;

type Trx = Transaction<Database>;

/** Due rows are the ones whose due_at passed: new, waiting for their next try, or whose lease ran out. */
export async function take(db: Db, { batch, leaseMs, round, maxAgeSeconds }: TakeOptions): Promise<Taken> {
  return db
    .transaction()
    .setIsolationLevel('read committed')
    .execute(async (trx) => {
      const dialect = dialectOf(trx);
      const due = await trx
        .selectFrom('webhook_events')
        .select([...EVENT_COLUMNS, dialect.msBetween(sql.ref('created_at'), dialect.now).as('age_ms')])
        .where('due_at', '<=', dialect.now)
        .orderBy('due_at')
        .orderBy('event_id')
        .limit(batch)
        .forUpdate()
        .skipLocked()
        .execute();
      const rows: WebhookRow[] = due.map(({ age_ms, type, event_id, order_id, voucher_id, user_id, ...r }) => ({
        ...r,
        event_id: String(event_id),
        order_id: String(order_id),
        voucher_id: String(voucher_id),
        user_id: String(user_id),
        type: type as OutboxRow['type'],
        ageMs: Number(age_ms),
      }));
      const tooOld = rows.filter((r) => r.ageMs >= maxAgeSeconds * 1000);
      await giveUp(trx, tooOld);
      const live = rows.filter((r) => r.ageMs < maxAgeSeconds * 1000);
      const leased = live.length ? sendableInOrder(live, await waiting(trx, live)) : [];
      const blocked = live.filter((r) => !leased.includes(r));
      const leaseEnd = dialect.nowPlusSeconds(leaseMs / 1000);
      await putOff(trx, blocked, leaseEnd, null);
      await putOff(trx, leased, leaseEnd, round);
      // Taken by due time: an order's events are sent in id order.
      return { claimed: rows.length, givenUp: tooOld.length, leased: leased.sort((a, b) => (BigInt(a.event_id) < BigInt(b.event_id) ? -1 : 1)) };
    });
}

/** Every waiting row of the orders of `rows` up to their last id (a plain read: rows other relays hold too). */
async function waiting(trx: Trx, rows: WebhookRow[]): Promise<{ order_id: string; event_id: string }[]> {
  const found = await trx
    .selectFrom('webhook_events')
    .select(['order_id', 'event_id'])
    .where('order_id', 'in', [...new Set(rows.map((r) => r.order_id))])
    .where('event_id', '<=', rows.reduce((max, r) => (BigInt(r.event_id) > max ? BigInt(r.event_id) : max), 0n).toString())
    .orderBy('event_id')
    .execute();
  return found.map((r) => ({ order_id: String(r.order_id), event_id: String(r.event_id) }));
}

async function putOff(trx: Trx, rows: WebhookRow[], until: RawBuilder<Date>, round: string | null): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .updateTable('webhook_events')
    .set({ due_at: until, leased_by: round })
    .where('event_id', 'in', rows.map((r) => r.event_id))
    .execute();
}

/** Moves rows to webhook_given_up, where operators find them; their orders' later rows may go now. */
async function giveUp(trx: Trx, rows: WebhookRow[]): Promise<void> {
  if (rows.length === 0) return;
  const ids = rows.map((r) => r.event_id);
  await trx
    .insertInto('webhook_given_up')
    .columns([...EVENT_COLUMNS])
    .expression(trx.selectFrom('webhook_events').select([...EVENT_COLUMNS]).where('event_id', 'in', ids))
    .execute();
  await dialectOf(trx).limitDelete(trx.deleteFrom('webhook_events').where('event_id', 'in', ids), ids.length).execute();
  await wake(trx, rows);
}

/** The orders' rows that waited behind the given ones (never tried, not leased) are due now. */
async function wake(trx: Trx, rows: WebhookRow[]): Promise<void> {
  const dialect = dialectOf(trx);
  await trx
    .updateTable('webhook_events')
    .set({ due_at: dialect.now })
    .where('order_id', 'in', [...new Set(rows.map((r) => r.order_id))])
    .where('leased_by', 'is', null)
    .where('attempts', '=', 0)
    .where('due_at', '>', dialect.now)
    .execute();
}

/**
 * Ends a round: failed and untried rows wait for their next try (one UPDATE), delivered rows are
 * deleted and their orders' blocked rows woken. Only rows still leased by `round` change: a row
 * whose lease ran out and that another round took is that round's now.
 */
export async function settle(db: Db, round: string, { delivered, failed, untried }: Settlement): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const dialect = dialectOf(trx);
    const back: { row: WebhookRow; waitMs: number; error?: string }[] = [...failed, ...untried];
    if (back.length) {
      // One statement for the round: each row's values picked by its id.
      const caseOf = <T>(pick: (b: (typeof back)[number]) => unknown, otherwise: RawBuilder<unknown>) =>
        sql<T>`case event_id ${sql.join(back.map((b) => sql`when ${sql.raw(int(b.row.event_id))} then ${pick(b)}`), sql` `)} else ${otherwise} end`;
      await trx
        .updateTable('webhook_events')
        .set({
          attempts: sql`attempts + ${caseOf<number>((b) => (b.error === undefined ? 0 : 1), sql`0`)}`,
          last_error: caseOf<string | null>((b) => (b.error === undefined ? sql.ref('last_error') : b.error.slice(0, 255)), sql.ref('last_error')),
          due_at: caseOf<Date>((b) => dialect.nowPlusSeconds(b.waitMs / 1000), dialect.now),
          leased_by: null,
        })
        .where('event_id', 'in', back.map((b) => b.row.event_id))
        .where('leased_by', '=', round)
        .execute();
    }
    if (delivered.length) {
      const ids = delivered.map((r) => r.event_id);
      await dialect.limitDelete(trx.deleteFrom('webhook_events').where('event_id', 'in', ids).where('leased_by', '=', round), ids.length).execute();
      await wake(trx, delivered);
    }
  });
}
