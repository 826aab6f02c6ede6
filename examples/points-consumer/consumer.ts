// An example consumer of the order events: a loyalty service that grants points when an order is
// paid. It shows what a consumer of an at-least-once stream must do:
//   - its own durable queue, bound to the routing keys it needs (order.paid here), declared
//     before the events it cares about are published (RabbitMQ drops what no queue is bound to);
//   - manual acks, after the work is done (a crash before the ack redelivers the message);
//   - dedupe by eventId, because the relay may send an event twice: the points and the event id's
//     mark are written together, in one Redis script (points.ts);
//   - a dead-letter exchange for poison messages (unparsable, or failing every time): rejected
//     without requeue, they wait in `<queue>.dead` for a person instead of looping forever.
//
//   node --import tsx examples/points-consumer/consumer.ts
// Environment: AMQP_URL (amqp://guest:guest@127.0.0.1:5672), EVENTS_EXCHANGE (seckill.orders),
// REDIS_URL (redis://127.0.0.1:6379), QUEUE (points.order-paid).
import amqp, { type ConsumeMessage } from 'amqplib';
import { Redis } from 'ioredis';
import { createPoints } from './points.js';

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const EXCHANGE = process.env.EVENTS_EXCHANGE ?? 'seckill.orders';
const QUEUE = process.env.QUEUE ?? 'points.order-paid';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** A message whose handling failed this often (redelivered by the broker) is poison. */
const MAX_ATTEMPTS = 5;

interface OrderEvent {
  eventId: string;
  type: string;
  orderId: string;
  voucherId: string;
  userId: string;
  quantity: number;
  status: string;
  at: string;
}

function parse(msg: ConsumeMessage): OrderEvent {
  const body = JSON.parse(msg.content.toString()) as Partial<OrderEvent>;
  for (const field of ['eventId', 'type', 'orderId', 'userId'] as const) {
    if (typeof body[field] !== 'string') throw new Error(`field ${field} is missing or not a string`);
  }
  if (!Number.isInteger(body.quantity)) throw new Error('field quantity is not an integer');
  return body as OrderEvent;
}

async function main() {
  const redis = new Redis(REDIS_URL);
  const points = createPoints(redis);
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  const deadLetters = `${QUEUE}.dlx`;
  await channel.assertExchange(EXCHANGE, 'topic', { durable: true });
  await channel.assertExchange(deadLetters, 'fanout', { durable: true });
  await channel.assertQueue(`${QUEUE}.dead`, { durable: true });
  await channel.bindQueue(`${QUEUE}.dead`, deadLetters, '');
  // A quorum queue counts deliveries (x-delivery-count), which is how poison is recognised.
  await channel.assertQueue(QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': deadLetters } });
  await channel.bindQueue(QUEUE, EXCHANGE, 'order.paid');
  await channel.prefetch(50);

  await channel.consume(QUEUE, async (msg) => {
    if (!msg) return; // the queue was deleted
    let event: OrderEvent;
    try {
      event = parse(msg);
    } catch (err) {
      console.error(`poison message dead-lettered: ${(err as Error).message}`);
      channel.nack(msg, false, false);
      return;
    }
    try {
      if (await points.grantOnce(event)) {
        console.log(`+${10 * event.quantity} points to user ${event.userId} for order ${event.orderId} (event ${event.eventId})`);
      } else {
        console.log(`event ${event.eventId} already handled: skipped`);
      }
      channel.ack(msg);
    } catch (err) {
      const attempts = Number(msg.properties.headers?.['x-delivery-count'] ?? 0) + 1;
      const poison = attempts >= MAX_ATTEMPTS;
      console.error(`event ${event.eventId} failed (attempt ${attempts}${poison ? ', dead-lettered' : ', requeued'}): ${(err as Error).message}`);
      channel.nack(msg, false, !poison);
    }
  });
  console.log(`consuming ${EXCHANGE} order.paid into ${QUEUE} (Ctrl-C to stop)`);

  const stop = async () => {
    await channel.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    redis.disconnect();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
