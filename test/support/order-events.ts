// Order events on the shared RabbitMQ for tests: an exchange of the file's own, a queue of its own
// that records every delivery (duplicates too), and what the database says each order's events
// must have been. Nothing shared is stopped or deleted.
import assert from 'node:assert/strict';
import { after } from 'node:test';
import amqp from 'amqplib';
import type { Db } from '../../src/infra/db/database.js';
import type { OrderEventBody } from '../../src/events/message.js';
import { uniqueName } from './helpers.js';
import { waitFor } from '../../support/wait.js';

export const AMQP_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface EventTap {
  exchange: string;
  /** Every delivery, in arrival order, duplicates included. */
  received: OrderEventBody[];
  /** The deliveries with repeated event ids dropped (what a deduping consumer keeps). */
  deduped(): OrderEventBody[];
  /** The traceparent header of each traced event, by event id. */
  traceParents: Map<string, string>;
}

/**
 * Declares `exchange` (as the relay does) and binds a queue of this file's to every order event,
 * before anything is published; queue and exchange are deleted after the file.
 */
export async function tapEvents(label: string): Promise<EventTap> {
  const exchange = uniqueName(label);
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
  await channel.bindQueue(queue, exchange, 'order.*');
  const received: OrderEventBody[] = [];
  const traceParents = new Map<string, string>();
  await channel.consume(queue, (msg) => {
    if (!msg) return;
    const body = JSON.parse(msg.content.toString()) as OrderEventBody;
    assert.equal(msg.properties.messageId, body.eventId, 'the message id is the event id');
    assert.equal(msg.fields.routingKey, `order.${body.type}`);
    assert.equal(msg.properties.deliveryMode, 2, 'persistent');
    received.push(body);
    const traceParent = (msg.properties.headers as Record<string, unknown> | undefined)?.traceparent;
    if (traceParent !== undefined) traceParents.set(body.eventId, String(traceParent));
    channel.ack(msg);
  });
  after(async () => {
    await channel.deleteExchange(exchange).catch(() => undefined);
    await connection.close().catch(() => undefined);
  });
  return {
    exchange,
    received,
    traceParents,
    deduped() {
      const seen = new Set<string>();
      return received.filter((e) => !seen.has(e.eventId) && seen.add(e.eventId));
    },
  };
}

const TYPES_BY_STATUS: Record<string, string[]> = {
  pending_payment: ['stored'],
  paid: ['stored', 'paid'],
  expired: ['stored', 'expired'],
  cancelled: ['stored', 'cancelled'],
  failed: ['failed'],
  refunded: ['stored', 'paid', 'refunded'],
};

/** Each stored order of the voucher with the event types its status implies, `promoted` first for promoted ones. */
export async function expectedEvents(db: Db, voucherId: string, promoted: Set<string> = new Set()): Promise<Map<string, string[]>> {
  const orders = await db.selectFrom('orders').select(['id', 'status']).where('voucher_id', '=', voucherId).execute();
  return new Map(orders.map((o) => [o.id, [...(promoted.has(o.id) ? ['promoted'] : []), ...TYPES_BY_STATUS[o.status]!]]));
}

/** The events of each order of the voucher, in arrival order. */
export function eventsByOrder(events: OrderEventBody[], voucherId: string): Map<string, OrderEventBody[]> {
  const out = new Map<string, OrderEventBody[]>();
  for (const e of events.filter((x) => x.voucherId === voucherId)) {
    const list = out.get(e.orderId);
    if (list) list.push(e);
    else out.set(e.orderId, [e]);
  }
  return out;
}

/**
 * After dedupe, every order has exactly the events the database implies, in the order they
 * happened (ids increasing), and the outbox ends with nothing of the voucher.
 */
export async function assertEventsDelivered(db: Db, tap: EventTap, voucherId: string, promoted?: Set<string>): Promise<void> {
  const expected = await expectedEvents(db, voucherId, promoted);
  const got = eventsByOrder(tap.deduped(), voucherId);
  assert.deepEqual([...got.keys()].sort(), [...expected.keys()].sort(), 'events for exactly the stored orders');
  for (const [orderId, types] of expected) {
    const events = got.get(orderId)!;
    assert.deepEqual(events.map((e) => e.type), types, `events of order ${orderId}`);
    const ids = events.map((e) => BigInt(e.eventId));
    assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), `event ids of order ${orderId} increase`);
  }
  // The consumer may hear of a round before the relay has deleted its rows.
  await waitFor('the outbox to be empty', async () => (await db.selectFrom('order_events').select('event_id').where('voucher_id', '=', voucherId).execute()).length === 0, 5_000);
}
