// The order-event outbox: every order state change (stored, failed, paid, expired, cancelled)
// writes its event row in the transaction that makes the change, so an event exists if and only if
// the change committed; a waitlist promotion's `promoted` row goes with its order's insert.
// events/event-relay.ts sends the rows to RabbitMQ. With events off (no EVENTS_AMQP_URL) nothing is
// written and the writers' transactions are unchanged.
import { sql, type Transaction } from 'kysely';
import { dialectOf, type SqlDialect } from '../infra/db/dialect.js';
import { int, text } from '../infra/db/literals.js';
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
