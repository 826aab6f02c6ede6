// The one typed configuration schema. Every setting: env var, default, parser, doc line.
// process.env is read here and nowhere else.
import { availableParallelism } from 'node:os';
import { addressList, hostPortList, int, intOrDerived, nonEmpty, oneOf, origins, type Parser, ratio, url } from './config/value-parsers.js';

interface Setting<T> {
  env: string;
  default: string;
  doc: string;
  parse: Parser<T>;
}

function setting<T>(env: string, def: string, parse: Parser<T>, doc: string): Setting<T> {
  return { env, default: def, doc, parse };
}

/** The built-in JWT_SECRET: published in the README, so good for this machine only. */
export const DEV_JWT_SECRET = 'dev-only-secret-change-me';
/** An HS256 key shorter than its 32-byte hash is weaker than the algorithm (RFC 7518 §3.2). */
export const MIN_SERVING_SECRET_BYTES = 32;

export const settings = {
  port: setting('PORT', '3000', int(0, 65535), 'HTTP port of `seckill serve`.'),
  host: setting('HOST', '127.0.0.1', nonEmpty(), 'Address `seckill serve` listens on.'),
  apiProcesses: setting('API_PROCESSES', '1', (raw) => int(0, 256)(raw) || availableParallelism(),
    'HTTP processes `seckill serve` runs on PORT (node:cluster), each a whole instance; 0 = one per CPU core.'),
  redisUrl: setting('REDIS_URL', 'redis://127.0.0.1:6379', url('redis:', 'rediss:'), 'Redis server (redis:// or rediss://).'),
  redisClusterNodes: setting('REDIS_CLUSTER_NODES', '', hostPortList,
    'Seed nodes (comma-separated host:port) of a Redis Cluster; when set, used instead of REDIS_URL\'s host (its password still applies). Empty: no cluster.'),
  redisSentinels: setting('REDIS_SENTINELS', '', hostPortList,
    'Sentinels (comma-separated host:port) of a Sentinel-managed Redis; when set, used instead of REDIS_URL\'s host (its password and db still apply). Empty: no Sentinel.'),
  redisSentinelName: setting('REDIS_SENTINEL_NAME', 'mymaster', nonEmpty(), 'Master name the sentinels know (with REDIS_SENTINELS).'),
  redisCommandTimeoutMs: setting('REDIS_COMMAND_TIMEOUT_MS', '5000', int(50, 60_000),
    'Longest wait for a Redis reply to a request (not to blocking reads) before it is answered 503 UNAVAILABLE: a hung Redis. (While Redis is unreachable, requests are answered 503 at once.)'),
  redisCheckIntervalMs: setting('REDIS_CHECK_INTERVAL_MS', '1000', int(50, 60_000),
    'How often each process checks that Redis still has its data (and how fast it answers, for /readyz); a loss is logged, counted and repaired.'),
  admitDurability: setting('ADMIT_DURABILITY', 'memory', oneOf('memory', 'fsync', 'replica'),
    'What a 202 guarantees: memory (the order is in Redis memory), fsync (Redis has it in its append-only file, fsynced; checked at start-up), replica (ADMIT_REPLICAS replicas have it: WAIT after the admit call, else 503).'),
  admitReplicas: setting('ADMIT_REPLICAS', '1', int(1, 16), 'ADMIT_DURABILITY=replica: replicas that must confirm an admission.'),
  admitWaitTimeoutMs: setting('ADMIT_WAIT_TIMEOUT_MS', '500', int(1, 60_000),
    'ADMIT_DURABILITY=replica: longest wait for the replicas; unconfirmed admissions are answered 503 (a retry with the same Idempotency-Key returns the same order).'),
  databaseUrl: setting('DATABASE_URL', 'mysql://root@127.0.0.1:3306/seckill', url('mysql:', 'mariadb:', 'postgres:', 'postgresql:'),
    'The database: mysql:// (MariaDB/MySQL) or postgres:// (PostgreSQL); it is created if missing.'),
  jwtSecret: setting('JWT_SECRET', DEV_JWT_SECRET, nonEmpty(),
    `HS256 secret for bearer tokens. \`seckill serve\` on a HOST other than loopback refuses the built-in one and any shorter than ${MIN_SERVING_SECRET_BYTES} bytes: with them anyone could sign an admin token.`),
  jwtMaxTtlSeconds: setting('JWT_MAX_TTL_SECONDS', '86400', int(0, 31_536_000),
    'Longest lifetime a bearer token may have: a token without `exp`, or whose `exp` lies further ahead, is refused (401), and `seckill token --ttl` is held to it. 0: tokens without `exp` are accepted (not for a server others can reach).'),
  redisPrefix: setting('REDIS_PREFIX', 'sk', nonEmpty(/^[A-Za-z0-9_.-]{1,32}$/, '1-32 of [A-Za-z0-9_.-]'),
    'Prefix of every Redis key; isolates environments and tests.'),
  logLevel: setting('LOG_LEVEL', 'info', oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'), 'pino log level.'),
  shards: setting('SHARDS', '16', int(1, 1024),
    'Number of order streams; a voucher lives on the shard a hash of its id picks. Fixed for the life of the data.'),
  workerLeaseTtlMs: setting('WORKER_LEASE_TTL_MS', '30000', int(3000, 600000), 'Lifetime of an id-generator worker lease in Redis; renewed every third of it.'),
  consumerName: setting('CONSUMER_NAME', '', (raw) => raw, 'Consumer name of this worker in the stream group; must be unique per process (default: host:pid).'),
  dbStatementTimeoutMs: setting('DB_STATEMENT_TIMEOUT_MS', '5000', int(100, 600_000),
    'Longest wait for one database statement (migrations excepted): past it the connection is destroyed and the request answered 503 UNAVAILABLE (the pipeline retries its batch), so a database that stops answering without closing holds no claim and no connection.'),
  pipelineLanes: setting('PIPELINE_LANES', '4', int(1, 1024), 'Concurrent stream readers per worker process: full batches are stored side by side, smaller ones one at a time.'),
  pipelineBatch: setting('PIPELINE_BATCH', '500', int(1, 10000), 'Most orders stored in one database transaction.'),
  pipelineBlockMs: setting('PIPELINE_BLOCK_MS', '1000', int(10, 60000), 'How long an idle reader blocks waiting for entries.'),
  claimIdleMs: setting('CLAIM_IDLE_MS', '30000', int(100, 3600000), 'An entry pending this long on a consumer (probably dead) is taken over by a live one.'),
  maxDeliveries: setting('MAX_DELIVERIES', '5', int(1, 1000),
    'Deliveries after which an entry that still cannot be stored becomes a failed order (dead letter).'),
  restoreWindowSeconds: setting('RESTORE_WINDOW_SECONDS', '30', int(0, 3600),
    'Stored orders stay in their stream this long: when the database fails over to a standby that had not received them, they are stored again (docs/operations.md: The database fails over). 0: not kept.'),
  expiryPollMs: setting('EXPIRY_POLL_MS', '500', int(10, 60000), 'How often a worker looks for unpaid orders past their deadline (database timer).'),
  expiryBatch: setting('EXPIRY_BATCH', '500', int(1, 10000), 'Most orders expired in one database transaction.'),
  waitlistMax: setting('WAITLIST_MAX', '10000', int(1, 10000000), 'Most users waiting per voucher (waitlist: true); later ones are told waitlisted: false.'),
  corsOrigins: setting('CORS_ORIGINS', '', origins,
    'Comma-separated origins (scheme://host[:port]) allowed to call the API from a browser with a bearer token (CORS, no cookies). Empty (the default): none; /console and /store/:voucherId are same-origin and need none.'),
  eventsAmqpUrl: setting('EVENTS_AMQP_URL', '', (raw) => (raw === '' ? '' : url('amqp:', 'amqps:')(raw)),
    'RabbitMQ (amqp:// or amqps://) that order events go to, through the database outbox (docs/events.md). Empty (the default): off, no event is written.'),
  eventsExchange: setting('EVENTS_EXCHANGE', 'seckill.orders', nonEmpty(/^[A-Za-z0-9._:-]{1,255}$/, 'an exchange name of letters, digits and . _ : -'),
    'Durable topic exchange the order events are published to (declared if missing), routing key order.<type>.'),
  paymentMode: setting('PAYMENT_MODE', 'simulated', oneOf('simulated', 'external'),
    'simulated: the buyer confirms their own order (POST /api/orders/:id/pay; loopback HOST only). external: payments come from the shop (docs/payments.md).'),
  defaultCurrency: setting('DEFAULT_CURRENCY', 'USD', nonEmpty(/^[A-Z]{3}$/, 'three capital letters (ISO 4217)'), 'Currency of a voucher created without one.'),
  stripeWebhookSecret: setting('STRIPE_WEBHOOK_SECRET', '', (raw) => raw,
    'Signing secret (whsec_...) of the Stripe webhook endpoint POST /api/payments/stripe. Empty (the default): every event is refused as unsigned.'),
  jwtJwksUrl: setting('JWT_JWKS_URL', '', (raw) => (raw === '' ? '' : url('http:', 'https:')(raw)),
    "The shop's identity provider's JWKS: RS256, ES256 and EdDSA tokens are verified with its keys (docs/identity.md). Empty (the default): HS256 only."),
  jwtIssuer: setting('JWT_ISSUER', '', (raw) => raw, 'When set, a JWKS-verified token\'s iss must equal it.'),
  jwtAudience: setting('JWT_AUDIENCE', '', (raw) => raw, 'When set, a JWKS-verified token\'s aud must equal or contain it.'),
  jwtUserClaim: setting('JWT_USER_CLAIM', 'sub', nonEmpty(), 'Claim of a JWKS-verified token holding the user id (a positive 64-bit decimal).'),
  jwtRolesClaim: setting('JWT_ROLES_CLAIM', 'role', nonEmpty(), 'Claim of a JWKS-verified token holding its roles (a string or an array of strings): admin, service.'),
  webhookUrl: setting('WEBHOOK_URL', '', (raw) => (raw === '' ? '' : url('http:', 'https:')(raw)),
    'Where every order event is POSTed, signed as Standard Webhooks says (docs/events.md). Empty (the default): off.'),
  webhookSecret: setting('WEBHOOK_SECRET', '', (raw) => (raw === '' ? '' : nonEmpty(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'whsec_ followed by base64')(raw)),
    'Signing secret of the webhooks (whsec_ + base64); required with WEBHOOK_URL.'),
  webhookMaxAgeSeconds: setting('WEBHOOK_MAX_AGE_SECONDS', '259200', int(60, 31_536_000),
    'An event still undelivered this long after it happened is given up: kept for operators and counted.'),
  eventsPollMs: setting('EVENTS_POLL_MS', '200', int(10, 60_000), 'How often a worker looks for unsent order events (at once after its own writes).'),
  eventsBatch: setting('EVENTS_BATCH', '2000', int(1, 10_000), 'Most order events one relay publishes and deletes in one database transaction.'),
  eventsConfirmTimeoutMs: setting('EVENTS_CONFIRM_TIMEOUT_MS', '', intOrDerived(100, 600_000),
    'Longest wait for RabbitMQ to confirm one relay round before the connection is given up and the round sent again (default: 5 s plus 2 ms per event of EVENTS_BATCH, 9 s at 2000).'),
  claimLockTtlMs: setting('CLAIM_LOCK_TTL_MS', '5000', int(100, 600000),
    'limited vouchers: lifetime of the per-user claim lock; renewed automatically while the claim runs.'),
  reconcileIntervalMs: setting('RECONCILE_INTERVAL_MS', '10000', int(0, 86400000),
    'How often reconciliation compares Redis with the database and repairs it (one runner across all workers; 0: off).'),
  bucketVoucherRate: setting('BUCKET_VOUCHER_RATE', '0', int(0, 10_000_000),
    'Claims per second one voucher takes, across every instance (token bucket in Redis; excess: 429 RATE_LIMITED). 0: off. Same value on every instance.'),
  bucketVoucherBurst: setting('BUCKET_VOUCHER_BURST', '', intOrDerived(1, 10_000_000),
    'Claims the voucher bucket can take at once after a quiet spell (default: BUCKET_VOUCHER_RATE, one second\'s worth).'),
  bucketUserRate: setting('BUCKET_USER_RATE', '5', int(0, 1_000_000),
    'Claims per second one buyer may send for one voucher, across every instance (token bucket in Redis; excess: 429 RATE_LIMITED). On by default at a pace no person clicking reaches, so one client firing hundreds of claims is turned away in Redis before any other check. 0: off.'),
  bucketUserBurst: setting('BUCKET_USER_BURST', '', intOrDerived(1, 1_000_000),
    'Claims one buyer can send at once for one voucher (default: twice BUCKET_USER_RATE, two seconds\' worth).'),
  ipRateLimit: setting('IP_RATE_LIMIT', '0', int(0, 100_000_000),
    'Requests to /api one client address may send per IP_RATE_WINDOW_MS, counted in each instance\'s memory (excess: 429 RATE_LIMITED). 0: off.'),
  ipRateWindowMs: setting('IP_RATE_WINDOW_MS', '1000', int(100, 3_600_000), 'Window of IP_RATE_LIMIT.'),
  trustedProxies: setting('TRUSTED_PROXIES', '', addressList,
    'Load balancers / proxies (comma-separated addresses or CIDR ranges) whose X-Forwarded-For names the client address for IP_RATE_LIMIT; empty (the default): none, the socket address is the client.'),
  soldOutCacheMs: setting('SOLD_OUT_CACHE_MS', '500', int(0, 60_000),
    'How long an instance answers SOLD_OUT from memory after Redis said a voucher is sold out (units coming back clear it sooner, via pub/sub). 0: off.'),
  sseMaxPerUser: setting('SSE_MAX_PER_USER', '8', int(1, 10_000),
    'Event streams (/api/orders/events, the console\'s live views) one user may hold open in one API process; past it: 429 TOO_MANY_STREAMS with Retry-After.'),
  sseMaxStreams: setting('SSE_MAX_STREAMS', '20000', int(1, 1_000_000),
    'Event streams one API process holds open in all; past it: 429 TOO_MANY_STREAMS with Retry-After.'),
  claimTokenTtlMs: setting('CLAIM_TOKEN_TTL_MS', '30000', int(1_000, 3_600_000),
    'Lifetime of a claim token (vouchers with claimToken: true), never past the end of the sale.'),
  httpRequestTimeoutMs: setting('HTTP_REQUEST_TIMEOUT_MS', '10000', int(1_000, 600_000),
    'A request whose headers and body have not arrived by then is answered 408 and closed (slow clients).'),
  httpKeepAliveTimeoutMs: setting('HTTP_KEEP_ALIVE_TIMEOUT_MS', '72000', int(1_000, 3_600_000),
    'An idle keep-alive connection is closed after this long; keep it above the load balancer\'s idle timeout (often 60 s).'),
  httpMaxHeaderBytes: setting('HTTP_MAX_HEADER_BYTES', '8192', int(1_024, 65_536),
    'Largest request head (request line and headers) accepted; larger: 431 HEADERS_TOO_LARGE.'),
  shutdownGraceMs: setting('SHUTDOWN_GRACE_MS', '1000', int(0, 120_000),
    'On SIGTERM, how long the API keeps serving (answers carry Connection: close) before it stops listening and closes idle connections, so clients on keep-alive connections are not reset mid-request.'),
  otelEndpoint: setting('OTEL_EXPORTER_OTLP_ENDPOINT', '', (raw) => (raw === '' ? '' : url('http:', 'https:')(raw)),
    'OTLP/HTTP collector that traces go to (at /v1/traces under it); tracing is off while neither this nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (docs/operations.md: Tracing).'),
  otelTracesEndpoint: setting('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', '', (raw) => (raw === '' ? '' : url('http:', 'https:')(raw)),
    'The whole URL traces are POSTed to (OTLP/HTTP, JSON); overrides OTEL_EXPORTER_OTLP_ENDPOINT for traces.'),
  otelServiceName: setting('OTEL_SERVICE_NAME', 'seckill', nonEmpty(), 'service.name of the spans.'),
  otelTracesSampler: setting('OTEL_TRACES_SAMPLER', 'parentbased_always_on',
    oneOf('always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'),
    'Which traces are kept: the OpenTelemetry sampler names; parentbased_* follow the caller\'s traceparent decision when there is one.'),
  otelBspScheduleDelayMs: setting('OTEL_BSP_SCHEDULE_DELAY', '5000', int(10, 600_000), 'Most milliseconds a finished span waits before it is sent (spans go in batches of up to 512).'),
  otelTracesSamplerArg: setting('OTEL_TRACES_SAMPLER_ARG', '1', ratio,
    'The share of traces the traceidratio samplers keep, 0 to 1 (e.g. 0.01: one in a hundred).'),
  overloadEventLoopDelayMs: setting('OVERLOAD_EVENT_LOOP_DELAY_MS', '0', int(0, 60_000),
    'Mean event-loop delay (sampled each second) above which the API answers 503 UNAVAILABLE with Retry-After instead of queueing; 0: off. ' +
      'Set it (e.g. 500) where the API has its cores to itself: on a shared machine, CPU taken by other processes looks the same.'),
  overloadHeapUsedMb: setting('OVERLOAD_HEAP_USED_MB', '', intOrDerived(0, 1_048_576),
    'V8 heap in use above which the API answers 503 UNAVAILABLE with Retry-After (default: 90% of the heap limit). 0: off.'),
} as const;

type Settings = typeof settings;
export type Config = { [K in keyof Settings]: Settings[K] extends Setting<infer T> ? T : never };

export class ConfigError extends Error {}

/** Parses the environment; throws ConfigError with a one-line message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [string, Setting<unknown>][]) {
    const raw = env[s.env];
    const value = raw === undefined || raw === '' ? s.default : raw;
    try {
      out[key] = s.parse(value);
    } catch (err) {
      throw new ConfigError(`invalid ${s.env}: ${(err as Error).message}`);
    }
  }
  return out as Config;
}
