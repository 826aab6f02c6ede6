// The order-event outbox: every order state change (stored, failed, paid, expired, cancelled)
// writes its event row in the transaction that makes the change, so an event exists if and only if
// the change committed; a waitlist promotion's `promoted` row goes with its order's insert.
// Each destination has its table: `order_events` for RabbitMQ (events/event-relay.ts, with
// EVENTS_AMQP_URL), `webhook_events` for WEBHOOK_URL (webhooks/), under one event id. With both
// off nothing is written and the writers' transactions are unchanged; with RabbitMQ alone the
// statement is the one it always was.
import { sql, type Transaction } from 'kysely';
import { dialectOf, type SqlDialect } from '../infra/db/dialect.js';
import { int, text } from '../infra/db/literals.js';
import type { Db } from '../infra/db/database.js';
import type { Database, OrderEventType } from '../infra/db/types.js';

export interface OutboxEvent {
  type: OrderEventType;
  orderId: string;
  voucherId: string | bigint;
  userId: string;
  quantity: number;
  /** The order's status after the event (`processing` for a promotion not stored yet). */
  status: string;
  /** The traceparent of the span that made the change, when traced: the event's publish and delivery join it. */
  traceParent?: string | null;
}

/** Where events go: RabbitMQ (EVENTS_AMQP_URL set), webhooks (WEBHOOK_URL set), either, both or neither. */
export interface EventDestinations {
  amqp: boolean;
  webhooks: boolean;
}

export interface EventOutbox {
  /** Whether events are written at all. */
  readonly enabled: boolean;
  readonly destinations: Readonly<EventDestinations>;
  /** Writes the events in `trx`, in the given order (their ids follow it): one statement; two with webhooks on, three with webhooks alone. */
  write(trx: Transaction<Database>, events: OutboxEvent[]): Promise<void>;
  /** Tells the local relays, if any, that rows were committed (they send them before their next poll). */
  committed(): void;
  /** Called by committed(); added by each relay of this process. */
  onCommitted(listener: () => void): void;
}

/** One multi-row INSERT, built by hand like the pipeline's order insert (cheap on 500 rows). */
export function insertEventsSql(dialect: SqlDialect, events: OutboxEvent[]): string {
  // The trace column only when an event is traced: an untraced write's statement is unchanged.
  const traced = events.some((e) => e.traceParent);
  const values = events.map(
    (e) =>
      `(${int(e.orderId)},${int(e.voucherId)},${int(e.userId)},${text(dialect, e.type)},${int(e.quantity)},${text(dialect, e.status)}` +
      `${traced ? `,${text(dialect, e.traceParent ?? null)}` : ''})`,
  );
  return `insert into order_events (order_id, voucher_id, user_id, type, quantity, status${traced ? ', trace_parent' : ''}) values ${values.join(',')}`;
}

/**
 * Copies the events just written to order_events (their ids) into webhook_events, the same
 * columns and the same ids: a receiver and a RabbitMQ consumer see one event id.
 */
function copyToWebhooksSql(eventIds: string[]): string {
  const columns = 'event_id, order_id, voucher_id, user_id, type, quantity, status, created_at, trace_parent';
  return `insert into webhook_events (${columns}) select ${columns} from order_events where event_id in (${eventIds.map(int).join(',')})`;
}

export function createEventOutbox(destinations: EventDestinations): EventOutbox {
  const listeners: (() => void)[] = [];
  const enabled = destinations.amqp || destinations.webhooks;
  return {
    enabled,
    destinations,
    async write(trx, events) {
      if (!enabled || events.length === 0) return;
      const insert = insertEventsSql(dialectOf(trx), events);
      if (!destinations.webhooks) return void (await sql.raw(insert).execute(trx));
      // The ids come from order_events' counter whichever destinations are on, so an id is never
      // given twice when RabbitMQ is turned on or off; without RabbitMQ the rows leave at once.
      const { rows } = await sql.raw<{ event_id: string | number }>(`${insert} returning event_id`).execute(trx);
      const ids = rows.map((r) => String(r.event_id));
      await sql.raw(copyToWebhooksSql(ids)).execute(trx);
      if (!destinations.amqp) await trx.deleteFrom('order_events').where('event_id', 'in', ids).execute();
    },
    committed: () => {
      for (const l of listeners) l();
    },
    onCommitted: (l) => {
      listeners.push(l);
    },
  };
}

/**
 * A destination's backlog at both ends of its primary key, whatever its size: `backlog` is the span
 * of unsent event ids (highest − lowest + 1), an upper bound on the rows (ids of rolled-back writes,
 * and rows another relay sent out of order, fall inside it; 0 when empty); `oldestAgeSeconds` is
 * the age of the lowest-id unsent event, in database time.
 */
export async function outboxBacklog(db: Db, table: 'order_events' | 'webhook_events' = 'order_events'): Promise<{ backlog: number; oldestAgeSeconds: number }> {
  const dialect = dialectOf(db);
  const { rows } = await sql<{ lowest: string; highest: string; age_ms: string | number }>`
    select e.event_id as lowest, (select max(event_id) from ${sql.raw(table)}) as highest, ${dialect.msBetween(sql.ref('e.created_at'), dialect.now)} as age_ms
    from ${sql.raw(table)} e order by e.event_id limit 1`.execute(db);
  const row = rows[0];
  if (!row) return { backlog: 0, oldestAgeSeconds: 0 };
  return { backlog: Number(BigInt(row.highest) - BigInt(row.lowest)) + 1, oldestAgeSeconds: Number(row.age_ms) / 1000 };
}
