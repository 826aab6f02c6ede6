import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** A claim answer's status code as the latency histogram's one label (three values, never more). */
export function claimOutcomeClass(statusCode: number): 'accepted' | 'refused' | 'unavailable' {
  return statusCode < 400 ? 'accepted' : statusCode < 500 ? 'refused' : 'unavailable';
}

export interface Metrics {
  registry: Registry;
  claims: Counter<'outcome'>;
  /** Counts one claim outcome; label children are cached (no label hashing per request). */
  countClaim(outcome: string): void;
  errors: Counter<'code'>;
  /** Counts one error answer by its code (cached label children, as countClaim). */
  countError(code: string): void;
  stored: Counter;
  failed: Counter<'reason'>;
  retries: Counter;
  expired: Counter;
  repairs: Counter<'kind'>;
  redisDataLosses: Counter;
  redisMasterChanges: Counter;
  /** Backwards jumps of the wall clock the id generator saw (ids continue from the last timestamp). */
  clockBackwards: Counter;
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
  /** Observes one answer of the claim route: its status code and how long it took, in seconds. */
  observeClaim(statusCode: number, seconds: number): void;
  /** Makes the pipeline lag gauge read `probe` at each scrape (the processes that run the pipeline). */
  watchPipelineLag(probe: () => number): void;
  /** Makes the stream backlog gauge read `probe` at each scrape (the processes that run the pipeline). */
  watchStreamBacklog(probe: () => Promise<number>): void;
  /** Makes the open event streams gauge read `probe` at each scrape (API processes). */
  watchOpenStreams(probe: () => number): void;
  /** How late each expired order was expired (expired at − due at, database time), in seconds. */
  expiryLateness: Histogram;
  /** Joins of queue vouchers' queues answered with a place. */
  queueJoins: Counter;
  /** Places admitted from queues: by the draw (`draw`) or later, as units came back (`promoted`). */
  queueAdmissions: Counter<'by'>;
  /** Seconds from beginAt to a draw's first places admitted. */
  queueDrawSeconds: Histogram;
  /** Payments recorded, by outcome: applied, or refund_due's reason (late, duplicate, mismatch). */
  payments: Counter<'outcome'>;
  /** Counts one delivery of POST /api/payments/stripe by what it did (payments/stripe-settle.ts). */
  countStripeEvent(outcome: string): void;
}

/** An outbox's backlog (span of waiting ids) and the age of its oldest waiting event. */
export interface OutboxReading {
  backlog: number;
  oldestAgeSeconds: number;
}

/** One registry per process (tests build several apps, so no global default registry). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    ...claimMetrics(registry),
    ...pipelineMetrics(registry),
    ...lifecycleMetrics(registry),
    ...consistencyMetrics(registry),
    ...eventMetrics(registry),
    ...webhookMetrics(registry),
    ...streamMetrics(registry),
    ...queueMetrics(registry),
    payments: new Counter({
      name: 'seckill_payments_total',
      help: 'Payments recorded (a repeated one is not counted again), by outcome: applied, or kept refund_due as late, duplicate or mismatch.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    ...stripeMetrics(registry),
  };
}

/** Queue vouchers: joins, admissions from the queues, and how long after the start a draw admitted. */
function queueMetrics(registry: Registry): Pick<Metrics, 'queueJoins' | 'queueAdmissions' | 'queueDrawSeconds'> {
  return {
    queueJoins: new Counter({ name: 'seckill_queue_joins_total', help: "Joins of queue vouchers' queues answered with a place (a buyer joining again included).", registers: [registry] }),
    queueAdmissions: new Counter({
      name: 'seckill_queue_admissions_total',
      help: 'Places admitted from queues: by the draw (the first places) or promoted later, as units came back.',
      labelNames: ['by'],
      registers: [registry],
    }),
    queueDrawSeconds: new Histogram({
      name: 'seckill_queue_draw_seconds',
      help: "Seconds from a queue voucher's beginAt to its draw's first places admitted (target: within 2 s).",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers: [registry],
    }),
  };
}

/** Deliveries of Stripe's webhook by outcome. */
function stripeMetrics(registry: Registry): Pick<Metrics, 'countStripeEvent'> {
  const events = new Counter({
    name: 'seckill_stripe_events_total',
    help:
      'Deliveries of the Stripe webhook by outcome: applied, refund_due, refunded, held (a refund before its payment), replayed, ' +
      'invalid_signature, processing (a payment for an order not stored yet: answered 409, Stripe delivers it again), or why a verified event changed nothing (unknown_order, other_payment, refused, other_type, not_paid, bad_metadata, bad_object, partial_refund).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const outcome = cachedChildren((value) => events.labels(value));
  return { countStripeEvent: (value) => outcome(value).inc() };
}

/** Server-sent event streams held open (capped by SSE_MAX_PER_USER and SSE_MAX_STREAMS). */
function streamMetrics(registry: Registry): Pick<Metrics, 'watchOpenStreams'> {
  let probe: (() => number) | null = null;
  new Gauge({
    name: 'seckill_sse_streams_open',
    help: 'Event streams (order events, the console\'s live views) this process holds open; past SSE_MAX_STREAMS they are refused with 429 TOO_MANY_STREAMS.',
    registers: [registry],
    collect() {
      if (probe) this.set(probe());
    },
  });
  return {
    watchOpenStreams: (read) => {
      probe = read;
    },
  };
}

/** The claim route: outcomes of the admission, error answers, and how long an answer took. */
function claimMetrics(registry: Registry): Pick<Metrics, 'claims' | 'countClaim' | 'errors' | 'countError' | 'observeClaim'> {
  const claims = new Counter({
    name: 'seckill_claims_total',
    help:
      'Seckill claims by outcome of the admission script (admitted, replayed, sold_out, limit_exceeded, not_started, ended, key_reused, ' +
      'rate_limited, missing) or sold_out_cached (answered from memory, no Redis).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const errors = new Counter({
    name: 'seckill_error_answers_total',
    help:
      'Error answers by code (RATE_LIMITED, UNAVAILABLE, CLAIM_TOKEN_*, SOLD_OUT, ...), whichever layer refused; ' +
      'sold-out answers of the claim route\'s first hook are counted in seckill_claims_total{outcome="sold_out_cached"} only.',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const claimDuration = new Histogram({
    name: 'seckill_claim_duration_seconds',
    help:
      'Time the claim route took to answer, from the request read to the answer sent, by outcome class: ' +
      'accepted (2xx), refused (4xx: sold out, limits, rate limits) or unavailable (5xx).',
    labelNames: ['outcome'] as const,
    // An admission takes ~1-20 ms under load; the tail up to a second shows an overloaded box.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  });
  const claim = cachedChildren((outcome) => claims.labels(outcome));
  const error = cachedChildren((code) => errors.labels(code));
  const duration = cachedChildren((outcome) => claimDuration.labels(outcome));
  return {
    claims,
    countClaim: (outcome) => claim(outcome).inc(),
    errors,
    countError: (code) => error(code).inc(),
    observeClaim: (statusCode, seconds) => duration(claimOutcomeClass(statusCode)).observe(seconds),
  };
}

/** The order pipeline: what it stored, failed and retried, and how far behind the admissions it is. */
function pipelineMetrics(registry: Registry): Pick<Metrics, 'stored' | 'failed' | 'retries' | 'watchPipelineLag' | 'watchStreamBacklog'> {
  const stored = new Counter({
    name: 'seckill_orders_stored_total',
    help: 'Admitted orders stored in the database by this process.',
    registers: [registry],
  });
  const failed = new Counter({
    name: 'seckill_orders_failed_total',
    help: 'Admitted orders stored as failed (and compensated in Redis), by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'seckill_pipeline_retries_total',
    help: 'Order batches retried after a transient database error.',
    registers: [registry],
  });
  let lagProbe: (() => number) | null = null;
  new Gauge({
    name: 'seckill_pipeline_lag_seconds',
    help:
      'Age of the oldest order entry in the batch a pipeline lane holds (or read last), the largest over the lanes: ' +
      'how far the database is behind the admissions. 0 after a read that found nothing.',
    registers: [registry],
    // Processes share the streams: the cluster view is the worst lane, not a sum.
    aggregator: 'max',
    collect() {
      if (lagProbe) this.set(lagProbe());
    },
  });
  let backlogProbe: (() => Promise<number>) | null = null;
  new Gauge({
    name: 'seckill_stream_backlog',
    help: 'Admitted orders in the shard streams not stored yet (delivered and unacknowledged, or not delivered), all shards, read at each scrape.',
    registers: [registry],
    // Every worker reads the same streams: the cluster view is one value, not a sum.
    aggregator: 'max',
    async collect() {
      if (backlogProbe) this.set(await backlogProbe().catch(() => NaN));
    },
  });
  return {
    stored,
    failed,
    retries,
    watchPipelineLag: (read) => {
      lagProbe = read;
    },
    watchStreamBacklog: (read) => {
      backlogProbe = read;
    },
  };
}

/** The payment timer: orders expired and how late. */
function lifecycleMetrics(registry: Registry): Pick<Metrics, 'expired' | 'expiryLateness'> {
  const expired = new Counter({
    name: 'seckill_orders_expired_total',
    help: 'Unpaid orders expired by this process (units given back; waitlist served from them).',
    registers: [registry],
  });
  const expiryLateness = new Histogram({
    name: 'seckill_expiry_lateness_seconds',
    help: 'How late the payment timer expired each unpaid order (expired at − expires_at, database time).',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [registry],
  });
  return { expired, expiryLateness };
}

/** Redis against the truth: drift reconciliation repaired, data Redis lost, masters it changed to. */
function consistencyMetrics(registry: Registry): Pick<Metrics, 'repairs' | 'redisDataLosses' | 'redisMasterChanges' | 'clockBackwards'> {
  const repairs = new Counter({
    name: 'seckill_reconcile_repairs_total',
    help: 'Drift repaired by reconciliation, by kind (docs/operations.md: Reconciliation and the audit).',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const redisDataLosses = new Counter({
    name: 'seckill_redis_data_losses_total',
    help: 'Times this process noticed that Redis had lost its data (restart without persistence, failover to an empty replica, flush).',
    registers: [registry],
  });
  const redisMasterChanges = new Counter({
    name: 'seckill_redis_master_changes_total',
    help: 'Times this process noticed that Redis answers from another master (a failover, a restart): voucher state is verified against the database before it admits again.',
    registers: [registry],
  });
  const clockBackwards = new Counter({
    name: 'seckill_clock_backwards_total',
    help: 'Times the wall clock of this process went back while it issued order ids; ids continue from the last timestamp, never reused (the log line gives how far).',
    registers: [registry],
  });
  return { repairs, redisDataLosses, redisMasterChanges, clockBackwards };
}

/** Order events: published to RabbitMQ, failed rounds of the relay, and the outbox still to send. */
function eventMetrics(registry: Registry): Pick<Metrics, 'eventsPublished' | 'eventRelayFailures' | 'watchEventOutbox'> {
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
function webhookMetrics(registry: Registry): Pick<Metrics, 'webhooksDelivered' | 'webhookFailedAttempts' | 'webhooksGivenUp' | 'watchWebhookOutbox'> {
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

/** Gauges collected at once in a scrape share one reading (one query). */
function oneReadPerScrape(probe: () => Promise<OutboxReading>): () => Promise<OutboxReading> {
  let reading: Promise<OutboxReading> | null = null;
  return () =>
    (reading ??= probe()
      .catch(() => ({ backlog: NaN, oldestAgeSeconds: NaN }))
      .finally(() => {
        reading = null;
      }));
}

/** A metric's child for one label value, made once (no label hashing per request). */
function cachedChildren<C>(labels: (value: string) => C): (value: string) => C {
  const children = new Map<string, C>();
  return (value) => {
    let child = children.get(value);
    if (!child) children.set(value, (child = labels(value)));
    return child;
  };
}
