// Publishes order events to a durable topic exchange on RabbitMQ over a confirm channel, and says
// only once the broker confirmed every message of a batch (persistent messages are confirmed
// when they are on disk in every queue they were routed to). connect() opens the connection and
// channel, within a deadline, on first use and again after a failure; the caller retries with
// back-off (events/event-relay.ts).
//
// A failed connection is destroyed, not closed: closing waits for the broker's close-ok, which a
// broker that stopped reading (a resource alarm, a hung peer) never sends, and every retry would
// leave one more connection behind. A connection the broker blocked (Connection.Blocked: memory
// or disk alarm) is healthy but takes nothing: it is kept, and nothing is published into it until
// the broker unblocks it.
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { Logger } from 'pino';
import type { EventMessage } from './message.js';

/** A broker that does not finish the handshake and the channel setup this fast is treated as down. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * EVENTS_CONFIRM_TIMEOUT_MS when not set: a fixed part for a broker's disk stall plus a part that
 * grows with the round (this box's broker confirms ~6,500 events/s, 0.15 ms each: 2 ms is ample),
 * so a large EVENTS_BATCH is not given up while it is still being confirmed, and sent again forever.
 */
export const derivedConfirmTimeoutMs = (batch: number): number => 5_000 + 2 * batch;

export interface EventPublisher {
  /** Opens the connection and confirm channel if there is none; throws when that fails or the broker blocks publishing. */
  connect(): Promise<void>;
  /** Publishes on the connection connect() opened; resolves when the broker confirmed every message, throws otherwise (some may have arrived). */
  publishConfirmed(messages: EventMessage[]): Promise<void>;
  close(): Promise<void>;
}

export interface AmqpPublisherDeps {
  url: string;
  exchange: string;
  log: Logger;
  /** How long the broker may take to confirm one batch before the connection is given up. */
  confirmTimeoutMs: number;
  connectTimeoutMs?: number;
}

interface Link {
  connection: ChannelModel;
  channel: ConfirmChannel;
  /** The broker's reason while it blocks publishing, else null. */
  blocked: string | null;
  /** Fails the confirm wait in progress, if any. */
  abort: ((err: Error) => void) | null;
}

/** Drops the socket at once (no close handshake), so a broker that stopped reading cannot keep it. */
function destroy(connection: ChannelModel): void {
  (connection.connection as unknown as { stream: { destroy(): void } }).stream.destroy();
}

export function createAmqpPublisher({ url, exchange, log, confirmTimeoutMs, connectTimeoutMs = CONNECT_TIMEOUT_MS }: AmqpPublisherDeps): EventPublisher {
  let link: Link | null = null;
  let opening: Promise<Link> | null = null;
  let closed = false;
  let connectedOnce = false;

  /** Gives the link up for good; a later connect() opens a new one. */
  function drop(l: Link): void {
    if (link === l) link = null;
    destroy(l.connection);
  }

  async function open(): Promise<Link> {
    let connection: ChannelModel | null = null;
    let abandoned = false;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abandoned = true;
        if (connection) destroy(connection);
        reject(new Error(`broker connection and channel not ready within ${connectTimeoutMs} ms`));
      }, connectTimeoutMs);
    });
    const setup = async (): Promise<Link> => {
      connection = await amqp.connect(url, { timeout: connectTimeoutMs, clientProperties: { connection_name: 'seckill order events' } });
      const c = connection;
      if (abandoned) destroy(c);
      // An 'error' is always followed by 'close'; without a listener it would crash the process.
      c.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: broker connection error'));
      try {
        const channel = await c.createConfirmChannel();
        channel.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: channel error'));
        await channel.assertExchange(exchange, 'topic', { durable: true });
        const l: Link = { connection: c, channel, blocked: null, abort: null };
        const lost = () => {
          l.abort?.(new Error('broker connection lost'));
          drop(l);
        };
        c.on('close', lost);
        channel.on('close', lost);
        c.on('blocked', (reason: string) => {
          l.blocked = reason || 'no reason given';
          log.warn({ reason: l.blocked }, 'order events: the broker blocked publishing (resource alarm); events wait in the outbox');
          l.abort?.(new Error(`the broker blocked publishing: ${l.blocked}`));
        });
        c.on('unblocked', () => {
          l.blocked = null;
          log.info('order events: the broker unblocked publishing');
        });
        return l;
      } catch (err) {
        destroy(c);
        throw err;
      }
    };
    try {
      const l = await Promise.race([setup(), deadline]);
      log.info({ exchange, reconnected: connectedOnce }, 'order events: connected to the broker');
      connectedOnce = true;
      return l;
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async connect() {
      if (closed) throw new Error('order event publisher is closed');
      link ??= await (opening ??= open().finally(() => {
        opening = null;
      }));
      if (link.blocked) throw new Error(`the broker blocks publishing: ${link.blocked}`);
    },

    async publishConfirmed(messages) {
      if (messages.length === 0) return;
      const l = link;
      if (!l) throw new Error('not connected to the broker');
      if (l.blocked) throw new Error(`the broker blocks publishing: ${l.blocked}`);
      for (const m of messages) {
        // publish() answering false only means the socket buffer is full; the confirms still come.
        l.channel.publish(exchange, m.routingKey, m.body, {
          persistent: true,
          messageId: m.eventId,
          type: m.type,
          contentType: 'application/json',
          timestamp: Math.floor(m.atMs / 1000),
        });
      }
      let timer: NodeJS.Timeout | undefined;
      const failed = new Promise<never>((_, reject) => {
        l.abort = reject;
        timer = setTimeout(() => reject(new Error(`broker did not confirm ${messages.length} event(s) within ${confirmTimeoutMs} ms`)), confirmTimeoutMs);
      });
      const confirmed = l.channel.waitForConfirms();
      confirmed.catch(() => undefined); // still pending when the wait is given up
      try {
        await Promise.race([confirmed, failed]);
      } catch (err) {
        // Blocked: the link is sound and is kept until unblocked. Otherwise its confirms can no
        // longer be trusted: start over on a fresh connection.
        if (!l.blocked) drop(l);
        throw err;
      } finally {
        l.abort = null;
        clearTimeout(timer);
      }
    },

    async close() {
      closed = true;
      const l = link ?? (await opening?.catch(() => null)) ?? null;
      link = null;
      // A blocked broker never answers the close: destroy the connection when it takes too long.
      if (l) await Promise.race([l.connection.close(), new Promise((r) => setTimeout(r, connectTimeoutMs).unref())]).catch(() => undefined).finally(() => destroy(l.connection));
    },
  };
}
