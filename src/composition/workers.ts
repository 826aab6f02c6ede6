// The workers' role on top of the core: the order pipeline, the payment timer, scheduled
// reconciliation, the order-event relay (with EVENTS_AMQP_URL) and the webhook relay (with
// WEBHOOK_URL). Each starts at most once and registers its own stop with the core's closer, so
// close() stops the workers before the clients they use.
import { hostname } from 'node:os';
import { ReconcileSchedule } from '../consistency/schedule.js';
import { createAmqpPublisher, derivedConfirmTimeoutMs } from '../events/amqp-publisher.js';
import { EventRelay } from '../events/event-relay.js';
import { outboxBacklog } from '../orders/event-outbox.js';
import { WEBHOOK_RELAY, WebhookRelay } from '../webhooks/webhook-relay.js';
import { createWebhookSender } from '../webhooks/webhook-sender.js';
import { ExpiryWorker } from '../lifecycle/expiry-worker.js';
import { allShards } from '../infra/redis/keys.js';
import { OrderPipeline } from '../pipeline/consumer.js';
import { PollLoop } from '../poll-loop.js';
import { ensureConsumerGroups, streamBacklog } from '../pipeline/maintenance.js';
import { createDraw } from '../queue/draw.js';
import { admitManyWith } from '../infra/redis/scripts/admission.js';
import { QueueRunner } from '../queue/runner.js';
import type { Closer } from './closer.js';
import type { Core } from './core.js';

export interface Workers {
  /** Starts the stream consumers in this process. */
  startPipeline(): Promise<OrderPipeline>;
  /** Starts the payment timer (expiry sweeps and the release relay) in this process. */
  startExpiry(): ExpiryWorker;
  /** Starts scheduled reconciliation (RECONCILE_INTERVAL_MS; one runner across processes). */
  startReconcile(): Promise<ReconcileSchedule | null>;
  /** Starts the queue runner: each queue voucher's draw at its beginAt, its closing at its endAt (one runner across processes). */
  startQueue(): Promise<QueueRunner>;
  /** Starts the relay of order events to RabbitMQ in this process (null: EVENTS_AMQP_URL is not set). */
  startEventRelay(): Promise<EventRelay | null>;
  /** Starts the relay of order events to WEBHOOK_URL in this process (null: WEBHOOK_URL is not set). */
  startWebhookRelay(): Promise<WebhookRelay | null>;
  /** Everything a worker runs: the pipeline, the payment timer, scheduled reconciliation, the queue runner and the event relays. */
  startWorkers(): Promise<void>;
}

/** Starts once; its stop joins the closer as soon as it exists. */
function startsOnce<T extends { close(): Promise<void> }>(closer: Closer, name: string, start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | null = null;
  return () =>
    (started ??= start().then((worker) => {
      closer.add(name, () => worker.close());
      return worker;
    }));
}

/** How often the pipeline's process asks which database server answers (lost-orders.ts). */
const DATABASE_WATCH_MS = 1_000;

async function startOrderPipeline({ config, log, redis, db, keys, scripts, metrics, pubsub, eventOutbox, redisWatch, lostOrders, closer }: Core): Promise<OrderPipeline> {
  const pipeline = await OrderPipeline.start({
    redis,
    db,
    keys,
    scripts,
    log,
    options: {
      consumer: config.consumerName || `${hostname()}:${process.pid}`,
      lanes: config.pipelineLanes,
      batchSize: config.pipelineBatch,
      blockMs: config.pipelineBlockMs,
      claimIdleMs: config.claimIdleMs,
      maxDeliveries: config.maxDeliveries,
      restoreWindowMs: config.restoreWindowSeconds * 1000,
    },
    eventOutbox,
    events: {
      stored: (n) => metrics.stored.inc(n),
      failed: (reason) => metrics.failed.inc({ reason }),
      retried: () => metrics.retries.inc(),
      announce: pubsub,
    },
  });
  // The lanes also recreate a missing group themselves (NOGROUP); this does it before the next read.
  redisWatch.onDataLoss('consumer groups', () => ensureConsumerGroups(redis, keys));
  // A failover of the database is noticed within a second: orders the new server lacks go back in flight.
  const databaseWatch = PollLoop.start({ name: 'database server watch', log, intervalMs: DATABASE_WATCH_MS, round: async () => (await lostOrders.check(), false) });
  closer.add('database server watch', () => databaseWatch.close());
  metrics.watchPipelineLag(() => pipeline.lagSeconds());
  const shards = allShards(keys);
  metrics.watchStreamBacklog(async () => (await Promise.all(shards.map((s) => streamBacklog(redis, keys.orders(s))))).reduce((a, b) => a + b, 0));
  return pipeline;
}

function startPaymentTimer({ config, log, metrics, releases, releaseRelay }: Core): ExpiryWorker {
  return ExpiryWorker.start({
    releases,
    releaseRelay,
    log,
    pollMs: config.expiryPollMs,
    batch: config.expiryBatch,
    onExpired: (n) => metrics.expired.inc(n),
  });
}

async function startReconcileSchedule({ config, log, redis, reconciler, redisWatch }: Core): Promise<ReconcileSchedule> {
  const schedule = await ReconcileSchedule.start({ redis, prefix: config.redisPrefix, intervalMs: config.reconcileIntervalMs, reconciler, log });
  redisWatch.onDataLoss('reconcile schedule', () => schedule.reschedule());
  return schedule;
}

async function startQueueRunner(core: Core): Promise<QueueRunner> {
  const { log, redis, keys, scripts, metrics, pubsub } = core;
  // The draw's admissions keep ADMIT_DURABILITY's promise, as claims do.
  const admitMany = admitManyWith(await core.admitGroups(), keys);
  const draw = createDraw({
    redis, keys, scripts, admitMany, pubsub, ids: core.ids,
    repository: core.queueRepository, redisState: core.redisState, verifier: core.verifier, queue: core.queue,
  });
  return QueueRunner.start({
    redis, keys, log, draw,
    repository: core.queueRepository, directory: core.directory, closing: core.queueClosing,
    onDrawn: (report) => {
      metrics.queueAdmissions.inc({ by: 'draw' }, report.admitted);
      metrics.queueDrawSeconds.observe(report.admittedAfterMs / 1000);
      log.info(report, 'queue drawn');
    },
  });
}

async function startOrderEventRelay({ config, log, db, metrics, eventOutbox }: Core): Promise<EventRelay> {
  const confirmTimeoutMs = config.eventsConfirmTimeoutMs ?? derivedConfirmTimeoutMs(config.eventsBatch);
  const publisher = createAmqpPublisher({ url: config.eventsAmqpUrl, exchange: config.eventsExchange, log, confirmTimeoutMs });
  // Not connected yet: a broker that is down delays the events, never the worker's start.
  const eventRelay = EventRelay.start({
    db,
    publisher,
    log,
    pollMs: config.eventsPollMs,
    batch: config.eventsBatch,
    onPublished: (n) => metrics.eventsPublished.inc(n),
    onFailed: () => metrics.eventRelayFailures.inc(),
  });
  eventOutbox.onCommitted(() => eventRelay.nudge());
  metrics.watchEventOutbox(() => outboxBacklog(db));
  return eventRelay;
}

async function startOrderWebhookRelay({ config, log, db, metrics, eventOutbox }: Core): Promise<WebhookRelay> {
  const sender = createWebhookSender({ url: config.webhookUrl, secret: config.webhookSecret, timeoutMs: WEBHOOK_RELAY.timeoutMs });
  const relay = WebhookRelay.start({
    ...WEBHOOK_RELAY,
    db,
    sender,
    log,
    pollMs: config.eventsPollMs,
    maxAgeSeconds: config.webhookMaxAgeSeconds,
    onDelivered: (n) => metrics.webhooksDelivered.inc(n),
    onFailedAttempts: (n) => metrics.webhookFailedAttempts.inc(n),
    onGivenUp: (n) => metrics.webhooksGivenUp.inc(n),
  });
  eventOutbox.onCommitted(() => relay.nudge());
  metrics.watchWebhookOutbox(() => outboxBacklog(db, 'webhook_events'));
  return relay;
}

export function createWorkers(core: Core): Workers {
  const { config, eventOutbox, closer } = core;
  const startPipeline = startsOnce(closer, 'order pipeline', () => startOrderPipeline(core));
  let expiry: ExpiryWorker | null = null;
  const startExpiry = () => {
    if (!expiry) {
      const started = startPaymentTimer(core);
      closer.add('payment timer', () => started.close());
      expiry = started;
    }
    return expiry;
  };
  const startSchedule = startsOnce(closer, 'reconcile schedule', () => startReconcileSchedule(core));
  const startReconcile = async () => (config.reconcileIntervalMs === 0 ? null : startSchedule());
  const startQueue = startsOnce(closer, 'queue runner', () => startQueueRunner(core));
  const startRelay = startsOnce(closer, 'order-event relay', () => startOrderEventRelay(core));
  const startEventRelay = async () => (eventOutbox.destinations.amqp ? startRelay() : null);
  const startWebhooks = startsOnce(closer, 'webhook relay', () => startOrderWebhookRelay(core));
  const startWebhookRelay = async () => (eventOutbox.destinations.webhooks ? startWebhooks() : null);

  return {
    startPipeline,
    startExpiry,
    startReconcile,
    startEventRelay,
    startWebhookRelay,
    startQueue,
    async startWorkers() {
      // The event relays first, so they close last (the closer is LIFO): the events of the batches
      // the pipeline, the timer and the release relay finish while closing still leave.
      await startEventRelay();
      await startWebhookRelay();
      await startPipeline();
      startExpiry();
      await startReconcile();
      await startQueue();
    },
  };
}
