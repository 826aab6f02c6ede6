// The message of one order event on RabbitMQ (docs/events.md): routing key `order.<type>`,
// a JSON body with every id as a string, and the event id as the AMQP message id (the consumers'
// dedupe key, delivery being at least once).
import type { OrderEventType } from '../infra/db/types.js';
import type { OrderEvent } from '../orders/order-pubsub.js';

/** The server-sent event's fields and the event id; `at` is when the row was written (database time). */
export interface OrderEventBody extends OrderEvent {
  eventId: string;
}

/** One row of `order_events` as the relay reads it. */
export interface OutboxRow {
  event_id: string;
  order_id: string;
  voucher_id: string;
  user_id: string;
  type: OrderEventType;
  quantity: number;
  status: string;
  created_at: Date;
  trace_parent: string | null;
}

export interface EventMessage {
  eventId: string;
  type: OrderEventType;
  routingKey: string;
  body: Buffer;
  /** Milliseconds since the epoch (the AMQP timestamp property is in seconds; this stays exact). */
  atMs: number;
  /** W3C traceparent sent with it (AMQP header, webhook header) when the event is traced. */
  traceParent?: string;
}

export function messageOf(row: OutboxRow): EventMessage {
  const body: OrderEventBody = {
    eventId: row.event_id,
    type: row.type,
    orderId: row.order_id,
    voucherId: row.voucher_id,
    userId: row.user_id,
    quantity: row.quantity,
    status: row.status,
    at: row.created_at.toISOString(),
  };
  return { eventId: row.event_id, type: row.type, routingKey: `order.${row.type}`, body: Buffer.from(JSON.stringify(body)), atMs: row.created_at.getTime() };
}
