// Sends the order-event outbox to RabbitMQ. Each round makes sure of the broker connection first
// (no row is held while a broker is slow to answer or blocks publishing), then, in ONE database
// transaction: claim the oldest unsent rows (FOR UPDATE SKIP LOCKED, so any number of workers
// share the work), keep per order only the events no other relay has an earlier one of, publish
// them in id order, wait for the broker's confirms, delete them, commit. A relay that dies at any
// point leaves its rows unsent (its transaction rolls back) and another round sends them again: at
// least once, never lost, and per order in the order they happened. Consumers dedupe by eventId.
import type { Logger } from 'pino';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';
import { PollLoop } from '../poll-loop.js';
import { Backoff } from '../retry-backoff.js';
import type { EventPublisher } from './amqp-publisher.js';
import type { OutboxRow } from './message.js';
import { endSending, sendingMessage } from './message-spans.js';

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5_000;

export interface EventRelayDeps {
  db: Db;
  publisher: EventPublisher;
  log: Logger;
  pollMs: number;
  batch: number;
  onPublished?(count: number): void;
  onFailed?(): void;
  /** Tests only: runs after the broker confirmed a round, before its rows are deleted. */
  afterConfirm?(): Promise<void>;
}

/**
 * The claimed rows that may leave now: per order, claimed rows in id order up to the first
 * unsent row of that order that another relay holds (it must leave first).
 */
export function sendableInOrder<R extends { order_id: string; event_id: string }>(claimed: R[], unsent: { order_id: string; event_id: string }[]): R[] {
  const ours = new Set(claimed.map((r) => r.event_id));
  const firstForeign = new Map<string, bigint>();
  for (const row of unsent) {
    if (!ours.has(row.event_id) && !firstForeign.has(row.order_id)) firstForeign.set(row.order_id, BigInt(row.event_id));
  }
  return claimed.filter((r) => {
    const foreign = firstForeign.get(r.order_id);
    return foreign === undefined || BigInt(r.event_id) < foreign;
  });
}

export class EventRelay {
  private readonly deps: EventRelayDeps;
  private readonly loop: PollLoop;

  private constructor(deps: EventRelayDeps) {
    this.deps = deps;
    this.loop = PollLoop.start({
      name: 'order-event relay',
      log: deps.log,
      intervalMs: deps.pollMs,
      // The rows stay in the outbox meanwhile.
      backoff: new Backoff(MIN_BACKOFF_MS, MAX_BACKOFF_MS),
      onFailed: () => deps.onFailed?.(),
      round: async () => {
        const { claimed, sent } = await this.round();
        return claimed === deps.batch && sent > 0; // a full batch left: more is waiting
      },
    });
  }

  static start(deps: EventRelayDeps): EventRelay {
    return new EventRelay(deps);
  }

  /** Rows were committed here: look at once instead of at the next poll. */
  nudge(): void {
    this.loop.wake();
  }

  private async round(): Promise<{ claimed: number; sent: number }> {
    const { db, publisher, batch, onPublished, afterConfirm } = this.deps;
    await publisher.connect();
    const result = await db
      .transaction()
      .setIsolationLevel('read committed')
      .execute(async (trx) => {
        const claimed: OutboxRow[] = await trx.selectFrom('order_events').selectAll().orderBy('event_id').limit(batch).forUpdate().skipLocked().execute();
        if (claimed.length === 0) return { claimed: 0, sent: 0 };
        const orderIds = [...new Set(claimed.map((r) => r.order_id))];
        // A plain read sees the rows other relays hold (locked, not yet deleted).
        const unsent = await trx
          .selectFrom('order_events')
          .select(['order_id', 'event_id'])
          .where('order_id', 'in', orderIds)
          .where('event_id', '<=', claimed[claimed.length - 1]!.event_id)
          .orderBy('event_id')
          .execute();
        const sendable = sendableInOrder(claimed, unsent);
        if (sendable.length === 0) return { claimed: claimed.length, sent: 0 };
        const sent = sendable.map((row) => sendingMessage(row, 'publish'));
        await publisher.publishConfirmed(sent.map((m) => m.message)).then(
          () => endSending(sent),
          (err: unknown) => {
            endSending(sent, err);
            throw err;
          },
        );
        await afterConfirm?.();
        await dialectOf(trx).limitDelete(trx.deleteFrom('order_events').where('event_id', 'in', sendable.map((r) => r.event_id)), sendable.length).execute();
        return { claimed: claimed.length, sent: sendable.length };
      });
    if (result.sent) onPublished?.(result.sent);
    return result;
  }

  /** Lets the current round finish (or fail), then stops and closes the broker connection. Idempotent. */
  async close(): Promise<void> {
    await this.loop.close();
    await this.deps.publisher.close();
  }
}
