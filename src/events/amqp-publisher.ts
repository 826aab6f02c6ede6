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

export function createAmqpPublisher(deps: AmqpPublisherDeps): EventPublisher {
  return new AmqpPublisher({ ...deps, connectTimeoutMs: deps.connectTimeoutMs ?? CONNECT_TIMEOUT_MS });
}

class AmqpPublisher implements EventPublisher {
  private readonly deps: Required<AmqpPublisherDeps>;
  private link: Link | null = null;
  private opening: Promise<Link> | null = null;
  private closed = false;
  private connectedOnce = false;

  constructor(deps: Required<AmqpPublisherDeps>) {
    this.deps = deps;
  }

  async connect(): Promise<void> {
    if (this.closed) throw new Error('order event publisher is closed');
    this.link ??= await (this.opening ??= this.open().finally(() => {
      this.opening = null;
    }));
    if (this.link.blocked) throw new Error(`the broker blocks publishing: ${this.link.blocked}`);
  }

  async publishConfirmed(messages: EventMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const l = this.link;
    if (!l) throw new Error('not connected to the broker');
    if (l.blocked) throw new Error(`the broker blocks publishing: ${l.blocked}`);
    for (const m of messages) {
      // publish() answering false only means the socket buffer is full; the confirms still come.
      l.channel.publish(this.deps.exchange, m.routingKey, m.body, {
        persistent: true,
        messageId: m.eventId,
        type: m.type,
        contentType: 'application/json',
        timestamp: Math.floor(m.atMs / 1000),
        ...(m.traceParent ? { headers: { traceparent: m.traceParent } } : {}),
      });
    }
    try {
      await this.confirmed(l, messages.length);
    } catch (err) {
      // Blocked: the link is sound and is kept until unblocked. Otherwise its confirms can no
      // longer be trusted: start over on a fresh connection.
      if (!l.blocked) this.drop(l);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const l = this.link ?? (await this.opening?.catch(() => null)) ?? null;
    this.link = null;
    // A blocked broker never answers the close: destroy the connection when it takes too long.
    if (l) await Promise.race([l.connection.close(), new Promise((r) => setTimeout(r, this.deps.connectTimeoutMs).unref())]).catch(() => undefined).finally(() => destroy(l.connection));
  }

  /** Waits for the broker's confirms of what was published on `l`, up to the confirm timeout, or until the link fails. */
  private async confirmed(l: Link, count: number): Promise<void> {
    const { confirmTimeoutMs } = this.deps;
    let timer: NodeJS.Timeout | undefined;
    const failed = new Promise<never>((_, reject) => {
      l.abort = reject;
      timer = setTimeout(() => reject(new Error(`broker did not confirm ${count} event(s) within ${confirmTimeoutMs} ms`)), confirmTimeoutMs);
    });
    const confirmed = l.channel.waitForConfirms();
    confirmed.catch(() => undefined); // still pending when the wait is given up
    try {
      await Promise.race([confirmed, failed]);
    } finally {
      l.abort = null;
      clearTimeout(timer);
    }
  }

  /** Gives the link up for good; a later connect() opens a new one. */
  private drop(l: Link): void {
    if (this.link === l) this.link = null;
    destroy(l.connection);
  }

  /** A connection and confirm channel, both ready within the connect timeout, or an error (the connection destroyed). */
  private async open(): Promise<Link> {
    const { url, connectTimeoutMs, log, exchange } = this.deps;
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
      if (abandoned) destroy(connection);
      return this.linkOn(connection);
    };
    try {
      const l = await Promise.race([setup(), deadline]);
      log.info({ exchange, reconnected: this.connectedOnce }, 'order events: connected to the broker');
      this.connectedOnce = true;
      return l;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The confirm channel on a fresh connection, the exchange declared, and the link watched. */
  private async linkOn(c: ChannelModel): Promise<Link> {
    const { log, exchange } = this.deps;
    // An 'error' is always followed by 'close'; without a listener it would crash the process.
    c.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: broker connection error'));
    try {
      const channel = await c.createConfirmChannel();
      channel.on('error', (err: Error) => log.warn({ err: err.message }, 'order events: channel error'));
      await channel.assertExchange(exchange, 'topic', { durable: true });
      const l: Link = { connection: c, channel, blocked: null, abort: null };
      this.watch(l);
      return l;
    } catch (err) {
      destroy(c);
      throw err;
    }
  }

  /** A lost connection or channel fails the confirm wait and is dropped; a blocked one is kept, marked. */
  private watch(l: Link): void {
    const { log } = this.deps;
    const lost = () => {
      l.abort?.(new Error('broker connection lost'));
      this.drop(l);
    };
    l.connection.on('close', lost);
    l.channel.on('close', lost);
    l.connection.on('blocked', (reason: string) => {
      l.blocked = reason || 'no reason given';
      log.warn({ reason: l.blocked }, 'order events: the broker blocked publishing (resource alarm); events wait in the outbox');
      l.abort?.(new Error(`the broker blocked publishing: ${l.blocked}`));
    });
    l.connection.on('unblocked', () => {
      l.blocked = null;
      log.info('order events: the broker unblocked publishing');
    });
  }
}
