// The buyer-facing metrics: claim outcomes, error answers and answer times, event streams held
// open, and the queues of queue vouchers.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { cachedChildren } from './label-children.js';

export interface ClaimMetrics {
  claims: Counter<'outcome'>;
  /** Counts one claim outcome; label children are cached (no label hashing per request). */
  countClaim(outcome: string): void;
  errors: Counter<'code'>;
  /** Counts one error answer by its code (cached label children, as countClaim). */
  countError(code: string): void;
  /** Observes one answer of the claim route: its status code and how long it took, in seconds. */
  observeClaim(statusCode: number, seconds: number): void;
  /** Makes the open event streams gauge read `probe` at each scrape (API processes). */
  watchOpenStreams(probe: () => number): void;
  /** Joins of queue vouchers' queues answered with a place. */
  queueJoins: Counter;
  /** Places admitted from queues: by the draw (`draw`) or later, as units came back (`promoted`). */
  queueAdmissions: Counter<'by'>;
  /** Seconds from beginAt to a draw's first places admitted. */
  queueDrawSeconds: Histogram;
  /** limited and common claims stored in one transaction (claims/sql-claim-group.ts). */
  sqlClaimGroups: Histogram;
}

export function claimMetrics(registry: Registry): ClaimMetrics {
  return {
    ...claimAnswers(registry),
    ...streamMetrics(registry),
    ...queueMetrics(registry),
    sqlClaimGroups: new Histogram({
      name: 'seckill_sql_claim_group_size',
      help: 'limited and common claims of one voucher decided and stored in one transaction (those that waited for the one before).',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers: [registry],
    }),
  };
}

/** A claim answer's status code as the latency histogram's one label (three values, never more). */
export function claimOutcomeClass(statusCode: number): 'accepted' | 'refused' | 'unavailable' {
  return statusCode < 400 ? 'accepted' : statusCode < 500 ? 'refused' : 'unavailable';
}

/** The claim route: outcomes of the admission, error answers, and how long an answer took. */
function claimAnswers(registry: Registry): Pick<ClaimMetrics, 'claims' | 'countClaim' | 'errors' | 'countError' | 'observeClaim'> {
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

/** Server-sent event streams held open (capped by SSE_MAX_PER_USER and SSE_MAX_STREAMS). */
function streamMetrics(registry: Registry): Pick<ClaimMetrics, 'watchOpenStreams'> {
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

/** Queue vouchers: joins, admissions from the queues, and how long after the start a draw admitted. */
function queueMetrics(registry: Registry): Pick<ClaimMetrics, 'queueJoins' | 'queueAdmissions' | 'queueDrawSeconds'> {
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
