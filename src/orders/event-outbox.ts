// The order-event outbox: every order state change (stored, failed, paid, expired, cancelled)
// writes its event row in the transaction that makes the change, so an event exists if and only if
// the change committed; a waitlist promotion's `promoted` row goes with its order's insert.
// events/event-relay.ts sends the rows to RabbitMQ. With events off (no EVENTS_AMQP_URL) nothing is
// written and the writers' transactions are unchanged.
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
}

export interface EventOutbox {
  /** Whether events are written at all (EVENTS_AMQP_URL set). */
  readonly enabled: boolean;
  /** Writes the events in `trx`, in the given order (their ids follow it), one statement. */
  write(trx: Transaction<Database>, events: OutboxEvent[]): Promise<void>;
  /** Tells the local relay, if any, that rows were committed (it sends them before its next poll). */
  committed(): void;
  /** Called by committed(); set by the relay of this process. */
  onCommitted(listener: () => void): void;
}

/** One multi-row INSERT, built by hand like the pipeline's order insert (cheap on 500 rows). */
export function insertEventsSql(dialect: SqlDialect, events: OutboxEvent[]): string {
  const values = events.map(
    (e) => `(${int(e.orderId)},${int(e.voucherId)},${int(e.userId)},${text(dialect, e.type)},${int(e.quantity)},${text(dialect, e.status)})`,
  );
  return `insert into order_events (order_id, voucher_id, user_id, type, quantity, status) values ${values.join(',')}`;
}

export function createEventOutbox({ enabled }: { enabled: boolean }): EventOutbox {
  let listener: (() => void) | null = null;
  return {
    enabled,
    async write(trx, events) {
      if (!enabled || events.length === 0) return;
      await sql.raw(insertEventsSql(dialectOf(trx), events)).execute(trx);
    },
    committed: () => {
      if (enabled) listener?.();
    },
    onCommitted: (l) => {
      listener = l;
    },
  };
}

/**
 * The outbox's backlog at both ends of its primary key, whatever its size: `backlog` is the span of
 * unsent event ids (highest − lowest + 1), an upper bound on the rows (ids of rolled-back writes,
 * and rows another relay sent out of order, fall inside it; 0 when empty); `oldestAgeSeconds` is
 * the age of the lowest-id unsent event, in database time.
 */
export async function outboxBacklog(db: Db): Promise<{ backlog: number; oldestAgeSeconds: number }> {
  const dialect = dialectOf(db);
  const { rows } = await sql<{ lowest: string; highest: string; age_ms: string | number }>`
    select e.event_id as lowest, (select max(event_id) from order_events) as highest, ${dialect.msBetween(sql.ref('e.created_at'), dialect.now)} as age_ms
    from order_events e order by e.event_id limit 1`.execute(db);
  const row = rows[0];
  if (!row) return { backlog: 0, oldestAgeSeconds: 0 };
  return { backlog: Number(BigInt(row.highest) - BigInt(row.lowest)) + 1, oldestAgeSeconds: Number(row.age_ms) / 1000 };
}
