// Publishes order events to a durable topic exchange on RabbitMQ over a confirm channel, and says
// only once the broker confirmed every message of a batch (persistent messages are confirmed
// when they are on disk in every queue they were routed to). The connection is opened on first
// use and again after it is lost; the caller retries with back-off (events/relay.ts).
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { Logger } from 'pino';
import type { EventMessage } from './message.js';

/** A broker that accepts the messages but never confirms them is treated as gone. */
const CONFIRM_TIMEOUT_MS = 10_000;
/** A broker that does not answer the connection handshake this fast is treated as down. */
const CONNECT_TIMEOUT_MS = 5_000;

export interface EventPublisher {
  /** Resolves when the broker confirmed every message; throws otherwise (some may have arrived). */
  publishConfirmed(messages: EventMessage[]): Promise<void>;
  close(): Promise<void>;
}

export interface AmqpPublisherDeps {
  url: string;
  exchange: string;
  log: Logger;
  confirmTimeoutMs?: number;
}

interface Link {
  connection: ChannelModel;
  channel: ConfirmChannel;
}

export function createAmqpPublisher({ url, exchange, log, confirmTimeoutMs = CONFIRM_TIMEOUT_MS }: AmqpPublisherDeps): EventPublisher {
  let link: Promise<Link> | null = null;
  let closed = false;
  let connectedOnce = false;

  async function open(): Promise<Link> {
    const connection = await amqp.connect(url, { timeout: CONNECT_TIMEOUT_MS, clientProperties: { connection_name: 'seckill order events' } });
    const forget = () => {
      link = null;
    };
    // An 'error' is always followed by 'close'; without a listener it would crash the process.
    connection.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: broker connection error'));
    connection.on('close', forget);
    try {
      const channel = await connection.createConfirmChannel();
      channel.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: channel error'));
      channel.on('close', () => {
        forget();
        connection.close().catch(() => undefined);
      });
      await channel.assertExchange(exchange, 'topic', { durable: true });
      log.info({ exchange, reconnected: connectedOnce }, 'order events: connected to the broker');
      connectedOnce = true;
      return { connection, channel };
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  function current(): Promise<Link> {
    if (closed) return Promise.reject(new Error('order event publisher is closed'));
    link ??= open().catch((err: unknown) => {
      link = null;
      throw err;
    });
    return link;
  }

  return {
    async publishConfirmed(messages) {
      if (messages.length === 0) return;
      const { connection, channel } = await current();
      for (const m of messages) {
        // publish() answering false only means the socket buffer is full; the confirms still come.
        channel.publish(exchange, m.routingKey, m.body, {
          persistent: true,
          messageId: m.eventId,
          type: m.type,
          contentType: 'application/json',
          timestamp: Math.floor(m.atMs / 1000),
        });
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`broker did not confirm ${messages.length} event(s) within ${confirmTimeoutMs} ms`)), confirmTimeoutMs);
      });
      try {
        await Promise.race([channel.waitForConfirms(), timeout]);
      } catch (err) {
        // Start over on a fresh connection: this one's confirms can no longer be trusted.
        link = null;
        connection.close().catch(() => undefined);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      closed = true;
      const open = link;
      link = null;
      if (open) await open.then((l) => l.connection.close()).catch(() => undefined);
    },
  };
}
