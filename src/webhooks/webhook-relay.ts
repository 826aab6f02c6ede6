// Delivers the webhook outbox (webhook_events) to WEBHOOK_URL, in every worker process, apart from
// the RabbitMQ relay: a receiver that is down or slow delays only its own deliveries. Each round
// leases the due rows (webhook-queue.ts: no transaction, no lock is held while requests run),
// sends each order's events one after the other in id order, stopping the order at its first
// failure (per order, an event never goes before an earlier undelivered one), several orders at a
// time, then settles: delivered rows deleted, failed ones retried with back-off (doubling per
// attempt, capped, never past the event's maximum age, when it is given up). A receiver that fails
// a whole round is taken for down: until it delivers again the relay tries one event at a time,
// with the same back-off, so a dead receiver costs a request now and then, not one per event.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { endSending, sendingMessage } from '../events/message-spans.js';
import { PollLoop } from '../poll-loop.js';
import { Backoff } from '../retry-backoff.js';
import { settle, take, type Settlement, type WebhookRow } from './webhook-queue.js';
import type { WebhookSender } from './webhook-sender.js';

export interface WebhookRelayDeps {
  db: Db;
  sender: WebhookSender;
  log: Logger;
  pollMs: number;
  /** Most rows one round leases. */
  batch: number;
  /** Orders whose events are being sent at the same time. */
  concurrency: number;
  /** The request timeout: a lease lasts several of them, and no request starts that could outlast it. */
  timeoutMs: number;
  maxAgeSeconds: number;
  /** Wait after an event's first failed attempt, doubled after each further one up to `retryMaxMs`. */
  retryFirstMs: number;
  retryMaxMs: number;
  onDelivered?(count: number): void;
  onFailedAttempts?(count: number): void;
  onGivenUp?(count: number): void;
  /** A round failed (database unavailable). */
  onFailed?(): void;
}

/**
 * How a worker's relay runs: rounds of up to 200 events, 16 orders at a time, 10 s for an answer,
 * the first retry after 1 s, doubled after each failure up to 5 minutes (an outage's backlog
 * leaves within 5 minutes of its end).
 */
export const WEBHOOK_RELAY = { batch: 200, concurrency: 16, timeoutMs: 10_000, retryFirstMs: 1_000, retryMaxMs: 300_000 } as const;

/** The wait before the next try of an event that failed its `attempts`-th time, never past its maximum age. */
export function retryWaitMs(row: Pick<WebhookRow, 'attempts' | 'ageMs'>, elapsedMs: number, deps: Pick<WebhookRelayDeps, 'retryFirstMs' | 'retryMaxMs' | 'maxAgeSeconds'>): number {
  const backoff = Math.min(deps.retryFirstMs * 2 ** Math.min(row.attempts, 30), deps.retryMaxMs);
  const left = deps.maxAgeSeconds * 1000 - row.ageMs - elapsedMs;
  return Math.max(0, Math.min(backoff, left));
}

/** Runs `work` on every item, at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

export class WebhookRelay {
  private readonly deps: WebhookRelayDeps;
  private readonly loop: PollLoop;
  /** With the round's number, at most 33 characters (leased_by holds 40). */
  private readonly name = randomBytes(8).toString('hex');
  private rounds = 0;
  /** Set while the receiver fails every attempt: no round before nextProbeAt, then one event. */
  private down: { backoff: Backoff; nextProbeAt: number } | null = null;
  /** Aborts the requests in flight when closing: they are tried again, by this process or another. */
  private readonly closing = new AbortController();

  private constructor(deps: WebhookRelayDeps) {
    this.deps = deps;
    this.loop = PollLoop.start({
      name: 'webhook relay',
      log: deps.log,
      intervalMs: deps.pollMs,
      backoff: new Backoff(100, 5_000),
      onFailed: () => deps.onFailed?.(),
      round: () => this.round(),
    });
  }

  static start(deps: WebhookRelayDeps): WebhookRelay {
    return new WebhookRelay(deps);
  }

  /** Rows were committed here: look at once instead of at the next poll. */
  nudge(): void {
    this.loop.wake();
  }

  /** Resolves true when a full batch was taken and some of it left: more is waiting. */
  private async round(): Promise<boolean> {
    const { db, batch, timeoutMs, maxAgeSeconds, onGivenUp, onDelivered, onFailedAttempts } = this.deps;
    if (this.down && Date.now() < this.down.nextProbeAt) return false;
    const started = Date.now();
    const leaseMs = 6 * timeoutMs;
    const round = `${this.name}:${++this.rounds}`;
    // While the receiver fails everything, one event at a time finds out when it is back.
    const taken = await take(db, { batch: this.down ? 1 : batch, leaseMs, round, maxAgeSeconds });
    if (taken.givenUp) onGivenUp?.(taken.givenUp);
    if (taken.leased.length === 0) return false;
    // A request started after this could still run when the lease ends.
    const lastStart = started + leaseMs - timeoutMs - 1_000;
    const settlement = await this.deliver(taken.leased, started, lastStart);
    await settle(db, round, settlement);
    const { delivered, failed } = settlement;
    if (delivered.length) onDelivered?.(delivered.length);
    if (failed.length) onFailedAttempts?.(failed.length);
    this.noteReceiver(delivered.length, failed);
    return !this.down && taken.claimed === batch && delivered.length > 0;
  }

  /** A round whose every attempt failed marks the receiver down; one delivery marks it back. */
  private noteReceiver(delivered: number, failed: Settlement['failed']): void {
    const { log, retryFirstMs, retryMaxMs } = this.deps;
    if (delivered > 0) {
      if (this.down) log.info('webhook receiver answers again');
      this.down = null;
    } else if (failed.length > 0) {
      if (!this.down) log.warn({ error: failed[0]!.error }, 'webhook receiver fails every event; trying one event at a time, with back-off');
      this.down ??= { backoff: new Backoff(retryFirstMs, retryMaxMs), nextProbeAt: 0 };
      this.down.nextProbeAt = Date.now() + this.down.backoff.next();
    }
  }

  /** Sends each order's rows in id order, up to its first failure; several orders at a time. */
  private async deliver(rows: WebhookRow[], started: number, lastStart: number): Promise<Settlement> {
    const { sender, concurrency } = this.deps;
    const byOrder = new Map<string, WebhookRow[]>();
    for (const row of rows) byOrder.set(row.order_id, [...(byOrder.get(row.order_id) ?? []), row]);
    const out: Settlement = { delivered: [], failed: [], untried: [] };
    await eachLimited([...byOrder.values()], concurrency, async (events) => {
      for (const [i, row] of events.entries()) {
        const rest = events.slice(i);
        if (Date.now() > lastStart || this.closing.signal.aborted) return void out.untried.push(...rest.map((r) => ({ row: r, waitMs: 0 })));
        const sending = sendingMessage(row, 'deliver');
        try {
          await sender.send(sending.message, this.closing.signal);
          endSending([sending]);
          out.delivered.push(row);
        } catch (err) {
          endSending([sending], err);
          if (this.closing.signal.aborted) return void out.untried.push(...rest.map((r) => ({ row: r, waitMs: 0 })));
          const waitMs = retryWaitMs(row, Date.now() - started, this.deps);
          out.failed.push({ row, error: (err as Error).message, waitMs });
          // The order's later events wait behind it.
          return void out.untried.push(...rest.slice(1).map((r) => ({ row: r, waitMs })));
        }
      }
    });
    return out;
  }

  /** Aborts the requests in flight, lets the round settle, then stops and closes the sender. Idempotent. */
  async close(): Promise<void> {
    this.closing.abort();
    await this.loop.close();
    await this.deps.sender.close();
  }
}
