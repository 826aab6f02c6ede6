// What the outboxes send: order events to RabbitMQ and webhooks, and what is still to send.
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter, Gauge, type Registry } from 'prom-client';

/** An outbox's backlog (span of waiting ids) and the age of its oldest waiting event. */
export interface OutboxReading {
  backlog: number;
  oldestAgeSeconds: number;
}

export interface OutboxMetrics {
  eventsPublished: Counter;
  eventRelayFailures: Counter;
  /** Makes the outbox gauges read `probe` at each scrape (the processes that relay events). */
  watchEventOutbox(probe: () => Promise<OutboxReading>): void;
  /** Webhook events the receiver answered 2xx (then deleted from the webhook outbox). */
  webhooksDelivered: Counter;
  /** Attempts at a webhook event that failed (no answer in time, connection refused, not 2xx). */
  webhookFailedAttempts: Counter;
  /** Webhook events given up after WEBHOOK_MAX_AGE_SECONDS undelivered (kept in webhook_given_up). */
  webhooksGivenUp: Counter;
  /** Makes the webhook outbox gauges read `probe` at each scrape (the processes that relay webhooks). */
  watchWebhookOutbox(probe: () => Promise<OutboxReading>): void;
}

export function outboxMetrics(registry: Registry): OutboxMetrics {
  return { ...eventMetrics(registry), ...webhookMetrics(registry) };
}

/** Order events: published to RabbitMQ, failed rounds of the relay, and the outbox still to send. */
function eventMetrics(registry: Registry): Pick<OutboxMetrics, 'eventsPublished' | 'eventRelayFailures' | 'watchEventOutbox'> {
  const eventsPublished = new Counter({
    name: 'seckill_events_published_total',
    help: 'Order events this process published to RabbitMQ and the broker confirmed (then deleted from the outbox).',
    registers: [registry],
  });
  const eventRelayFailures = new Counter({
    name: 'seckill_events_relay_failures_total',
    help: 'Rounds of the order-event relay that failed (broker or database unavailable, no confirm); their events stay in the outbox and are sent again.',
    registers: [registry],
  });
  let probe: (() => Promise<OutboxReading>) | null = null;
  const readOutbox = oneReadPerScrape(() => probe!());
  new Gauge({
    name: 'seckill_events_outbox_backlog',
    help: 'Span of unsent order-event ids (highest − lowest + 1): an upper bound on the events not yet confirmed by RabbitMQ, read off the primary key at each scrape.',
    registers: [registry],
    // Every process reads the same table: the cluster view is one value, not a sum.
    aggregator: 'max',
    async collect() {
      if (probe) this.set((await readOutbox()).backlog);
    },
  });
  new Gauge({
    name: 'seckill_events_oldest_unsent_age_seconds',
    help: 'Age of the oldest order event not yet confirmed by RabbitMQ (0: none), in database time.',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      if (probe) this.set((await readOutbox()).oldestAgeSeconds);
    },
  });
  return {
    eventsPublished,
    eventRelayFailures,
    watchEventOutbox: (read) => {
      probe = read;
    },
  };
}

/** Webhooks: delivered, failed attempts, given up, and the webhook outbox still to deliver. */
function webhookMetrics(registry: Registry): Pick<OutboxMetrics, 'webhooksDelivered' | 'webhookFailedAttempts' | 'webhooksGivenUp' | 'watchWebhookOutbox'> {
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
  let probe: (() => Promise<OutboxReading>) | null = null;
  const readOutbox = oneReadPerScrape(() => probe!());
  const gauge = (name: string, help: string, pick: (r: OutboxReading) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      // Every process reads the same table: the cluster view is one value, not a sum.
      aggregator: 'max',
      async collect() {
        if (probe) this.set(pick(await readOutbox()));
      },
    });
  gauge('seckill_webhooks_waiting', 'Span of waiting webhook event ids (highest − lowest + 1): an upper bound on the events not yet delivered nor given up, read off the primary key at each scrape.', (r) => r.backlog);
  gauge('seckill_webhooks_oldest_waiting_age_seconds', 'Age of the oldest webhook event not yet delivered nor given up (0: none), in database time.', (r) => r.oldestAgeSeconds);
  return {
    webhooksDelivered: counter('seckill_webhooks_delivered_total', 'Order events this process POSTed to WEBHOOK_URL and the receiver answered 2xx (then deleted from the webhook outbox).'),
    webhookFailedAttempts: counter('seckill_webhooks_failed_attempts_total', 'Attempts of this process at a webhook event that failed (no answer in time, connection refused, an answer not 2xx); each is tried again with back-off.'),
    webhooksGivenUp: counter('seckill_webhooks_given_up_total', 'Webhook events this process gave up, undelivered WEBHOOK_MAX_AGE_SECONDS after they happened; they are kept in the table webhook_given_up.'),
    watchWebhookOutbox: (read) => {
      probe = read;
    },
  };
}

const UNKNOWN: OutboxReading = { backlog: NaN, oldestAgeSeconds: NaN };
/** A scrape waits this long for the reading: a silent database must not hang /metrics (the other gauges' scrape with it). */
const READ_DEADLINE_MS = 1_000;

/**
 * Gauges collected at once in a scrape share one reading (one query), and a query still running
 * is shared by the next scrapes rather than joined by another; past the deadline they read NaN.
 */
function oneReadPerScrape(probe: () => Promise<OutboxReading>): () => Promise<OutboxReading> {
  let reading: Promise<OutboxReading> | null = null;
  return () => {
    reading ??= probe()
      .catch(() => UNKNOWN)
      .finally(() => {
        reading = null;
      });
    return Promise.race([reading, sleep(READ_DEADLINE_MS, UNKNOWN, { ref: false })]);
  };
}
