// The one typed configuration schema. Every setting: env var, default, doc line, parser.
// process.env is read here and nowhere else.
import { BlockList, isIP } from 'node:net';
import { availableParallelism } from 'node:os';

type Parser<T> = (raw: string) => T;

interface Setting<T> {
  env: string;
  default: string;
  doc: string;
  parse: Parser<T>;
}

function setting<T>(env: string, def: string, doc: string, parse: Parser<T>): Setting<T> {
  return { env, default: def, doc, parse };
}

const int = (min: number, max: number): Parser<number> => (raw) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`expected an integer in ${min}..${max}, got ${n}`);
  return n;
};

const url = (...protocols: string[]): Parser<string> => (raw) => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error(`expected a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new Error(`expected a ${protocols.join(' or ')} URL, got "${parsed.protocol}"`);
  }
  return raw;
};

/** Comma-separated origins (scheme://host[:port]); empty: none. */
const origins: Parser<string[]> = (raw) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item) => {
      let origin: string;
      try {
        origin = new URL(item).origin;
      } catch {
        throw new Error(`expected origins like https://shop.example.com, got "${item}"`);
      }
      if (origin === 'null' || origin !== item.replace(/\/$/, '')) throw new Error(`expected an origin (scheme://host[:port], no path), got "${item}"`);
      return origin;
    });

const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!(values as string[]).includes(raw)) throw new Error(`expected one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

/** Comma-separated addresses or CIDR ranges (or proxy-addr's names loopback, linklocal, uniquelocal); empty: none. */
const addressList: Parser<string[]> = (raw) => {
  const items = raw.split(',').map((item) => item.trim()).filter(Boolean);
  for (const item of items) {
    const [address = '', bits, extra] = item.split('/');
    const named = ['loopback', 'linklocal', 'uniquelocal'].includes(item);
    if (!named && (extra !== undefined || isIP(address) === 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits)))) {
      throw new Error(`expected addresses or CIDR ranges, got "${item}"`);
    }
  }
  return items;
};

/** Comma-separated host:port pairs; empty: none. */
const hostPortList: Parser<{ host: string; port: number }[]> = (raw) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item) => {
      const match = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(item);
      const port = Number(match?.[2]);
      if (!match || port < 1 || port > 65535) throw new Error(`expected host:port, got "${item}"`);
      return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
    });

/** An integer, or null for an empty value: the setting is then derived (see its doc line). */
const intOrDerived = (min: number, max: number): Parser<number | null> => (raw) => (raw === '' ? null : int(min, max)(raw));

const nonEmpty = (pattern?: RegExp, what?: string): Parser<string> => (raw) => {
  if (raw.length === 0) throw new Error('must not be empty');
  if (pattern && !pattern.test(raw)) throw new Error(`expected ${what}, got "${raw}"`);
  return raw;
};

/** The built-in JWT_SECRET: published in the README, so good for this machine only. */
const DEV_JWT_SECRET = 'dev-only-secret-change-me';
/** An HS256 key shorter than its 32-byte hash is weaker than the algorithm (RFC 7518 §3.2). */
const MIN_SERVING_SECRET_BYTES = 32;

export const settings = {
  port: setting('PORT', '3000', 'HTTP port of `seckill serve`.', int(0, 65535)),
  host: setting('HOST', '127.0.0.1', 'Address `seckill serve` listens on.', nonEmpty()),
  apiProcesses: setting(
    'API_PROCESSES',
    '1',
    'HTTP processes `seckill serve` runs on PORT (node:cluster), each a whole instance; 0 = one per CPU core.',
    (raw) => int(0, 256)(raw) || availableParallelism(),
  ),
  redisUrl: setting('REDIS_URL', 'redis://127.0.0.1:6379', 'Redis server (redis:// or rediss://).', url('redis:', 'rediss:')),
  redisClusterNodes: setting(
    'REDIS_CLUSTER_NODES',
    '',
    'Seed nodes (comma-separated host:port) of a Redis Cluster; when set, used instead of REDIS_URL\'s host (its password still applies). Empty: no cluster.',
    hostPortList,
  ),
  redisSentinels: setting(
    'REDIS_SENTINELS',
    '',
    'Sentinels (comma-separated host:port) of a Sentinel-managed Redis; when set, used instead of REDIS_URL\'s host (its password and db still apply). Empty: no Sentinel.',
    hostPortList,
  ),
  redisSentinelName: setting('REDIS_SENTINEL_NAME', 'mymaster', 'Master name the sentinels know (with REDIS_SENTINELS).', nonEmpty()),
  redisCommandTimeoutMs: setting(
    'REDIS_COMMAND_TIMEOUT_MS',
    '5000',
    'Longest wait for a Redis reply to a request (not to blocking reads) before it is answered 503 UNAVAILABLE: a hung Redis. (While Redis is unreachable, requests are answered 503 at once.)',
    int(50, 60_000),
  ),
  redisCheckIntervalMs: setting(
    'REDIS_CHECK_INTERVAL_MS',
    '1000',
    'How often each process checks that Redis still has its data (and how fast it answers, for /readyz); a loss is logged, counted and repaired.',
    int(50, 60_000),
  ),
  admitDurability: setting(
    'ADMIT_DURABILITY',
    'memory',
    'What a 202 guarantees: memory (the order is in Redis memory), fsync (Redis has it in its append-only file, fsynced; checked at start-up), replica (ADMIT_REPLICAS replicas have it: WAIT after the admit call, else 503).',
    oneOf('memory', 'fsync', 'replica'),
  ),
  admitReplicas: setting('ADMIT_REPLICAS', '1', 'ADMIT_DURABILITY=replica: replicas that must confirm an admission.', int(1, 16)),
  admitWaitTimeoutMs: setting(
    'ADMIT_WAIT_TIMEOUT_MS',
    '500',
    'ADMIT_DURABILITY=replica: longest wait for the replicas; unconfirmed admissions are answered 503 (a retry with the same Idempotency-Key returns the same order).',
    int(1, 60_000),
  ),
  databaseUrl: setting(
    'DATABASE_URL',
    'mysql://root@127.0.0.1:3306/seckill',
    'The database: mysql:// (MariaDB/MySQL) or postgres:// (PostgreSQL); it is created if missing.',
    url('mysql:', 'mariadb:', 'postgres:', 'postgresql:'),
  ),
  jwtSecret: setting(
    'JWT_SECRET',
    DEV_JWT_SECRET,
    `HS256 secret for bearer tokens. \`seckill serve\` on a HOST other than loopback refuses the built-in one and any shorter than ${MIN_SERVING_SECRET_BYTES} bytes: with them anyone could sign an admin token.`,
    nonEmpty(),
  ),
  jwtMaxTtlSeconds: setting(
    'JWT_MAX_TTL_SECONDS',
    '86400',
    'Longest lifetime a bearer token may have: a token without `exp`, or whose `exp` lies further ahead, is refused (401), and `seckill token --ttl` is held to it. 0: tokens without `exp` are accepted (not for a server others can reach).',
    int(0, 31_536_000),
  ),
  redisPrefix: setting(
    'REDIS_PREFIX',
    'sk',
    'Prefix of every Redis key; isolates environments and tests.',
    nonEmpty(/^[A-Za-z0-9_.-]{1,32}$/, '1-32 of [A-Za-z0-9_.-]'),
  ),
  logLevel: setting('LOG_LEVEL', 'info', 'pino log level.', oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent')),
  shards: setting(
    'SHARDS',
    '16',
    'Number of order streams; a voucher lives on the shard a hash of its id picks. Fixed for the life of the data.',
    int(1, 1024),
  ),
  workerLeaseTtlMs: setting(
    'WORKER_LEASE_TTL_MS',
    '30000',
    'Lifetime of an id-generator worker lease in Redis; renewed every third of it.',
    int(3000, 600000),
  ),
  consumerName: setting(
    'CONSUMER_NAME',
    '',
    'Consumer name of this worker in the stream group; must be unique per process (default: host:pid).',
    (raw) => raw,
  ),
  dbStatementTimeoutMs: setting(
    'DB_STATEMENT_TIMEOUT_MS',
    '5000',
    'Longest wait for one database statement (migrations excepted): past it the connection is destroyed and the request answered 503 UNAVAILABLE (the pipeline retries its batch), so a database that stops answering without closing holds no claim and no connection.',
    int(100, 600_000),
  ),
  pipelineLanes: setting('PIPELINE_LANES', '4', 'Concurrent stream readers (batches in flight) per worker process.', int(1, 1024)),
  pipelineBatch: setting('PIPELINE_BATCH', '500', 'Most orders stored in one database transaction.', int(1, 10000)),
  pipelineBlockMs: setting('PIPELINE_BLOCK_MS', '1000', 'How long an idle reader blocks waiting for entries.', int(10, 60000)),
  claimIdleMs: setting(
    'CLAIM_IDLE_MS',
    '30000',
    'An entry pending this long on a consumer (probably dead) is taken over by a live one.',
    int(100, 3600000),
  ),
  maxDeliveries: setting(
    'MAX_DELIVERIES',
    '5',
    'Deliveries after which an entry that still cannot be stored becomes a failed order (dead letter).',
    int(1, 1000),
  ),
  expiryPollMs: setting(
    'EXPIRY_POLL_MS',
    '500',
    'How often a worker looks for unpaid orders past their deadline (database timer).',
    int(10, 60000),
  ),
  expiryBatch: setting('EXPIRY_BATCH', '500', 'Most orders expired in one database transaction.', int(1, 10000)),
  waitlistMax: setting('WAITLIST_MAX', '10000', 'Most users waiting per voucher (waitlist: true); later ones are told waitlisted: false.', int(1, 10000000)),
  corsOrigins: setting(
    'CORS_ORIGINS',
    '',
    'Comma-separated origins (scheme://host[:port]) allowed to call the API from a browser with a bearer token (CORS, no cookies). Empty (the default): none; /console and /store/:voucherId are same-origin and need none.',
    origins,
  ),
  eventsAmqpUrl: setting(
    'EVENTS_AMQP_URL',
    '',
    'RabbitMQ (amqp:// or amqps://) that order events go to, through the database outbox (docs/events.md). Empty (the default): off, no event is written.',
    (raw) => (raw === '' ? '' : url('amqp:', 'amqps:')(raw)),
  ),
  eventsExchange: setting(
    'EVENTS_EXCHANGE',
    'seckill.orders',
    'Durable topic exchange the order events are published to (declared if missing), routing key order.<type>.',
    nonEmpty(/^[A-Za-z0-9._:-]{1,255}$/, 'an exchange name of letters, digits and . _ : -'),
  ),
  eventsPollMs: setting('EVENTS_POLL_MS', '200', 'How often a worker looks for unsent order events (at once after its own writes).', int(10, 60_000)),
  eventsBatch: setting('EVENTS_BATCH', '2000', 'Most order events one relay publishes and deletes in one database transaction.', int(1, 10_000)),
  eventsConfirmTimeoutMs: setting(
    'EVENTS_CONFIRM_TIMEOUT_MS',
    '',
    'Longest wait for RabbitMQ to confirm one relay round before the connection is given up and the round sent again (default: 5 s plus 2 ms per event of EVENTS_BATCH, 9 s at 2000).',
    intOrDerived(100, 600_000),
  ),
  claimLockTtlMs: setting(
    'CLAIM_LOCK_TTL_MS',
    '5000',
    'limited vouchers: lifetime of the per-user claim lock; renewed automatically while the claim runs.',
    int(100, 600000),
  ),
  reconcileIntervalMs: setting(
    'RECONCILE_INTERVAL_MS',
    '10000',
    'How often reconciliation compares Redis with the database and repairs it (one runner across all workers; 0: off).',
    int(0, 86400000),
  ),
  bucketVoucherRate: setting(
    'BUCKET_VOUCHER_RATE',
    '0',
    'Claims per second one voucher takes, across every instance (token bucket in Redis; excess: 429 RATE_LIMITED). 0: off. Same value on every instance.',
    int(0, 10_000_000),
  ),
  bucketVoucherBurst: setting(
    'BUCKET_VOUCHER_BURST',
    '',
    'Claims the voucher bucket can take at once after a quiet spell (default: BUCKET_VOUCHER_RATE, one second\'s worth).',
    intOrDerived(1, 10_000_000),
  ),
  bucketUserRate: setting(
    'BUCKET_USER_RATE',
    '5',
    'Claims per second one buyer may send for one voucher, across every instance (token bucket in Redis; excess: 429 RATE_LIMITED). On by default at a pace no person clicking reaches, so one client firing hundreds of claims is turned away in Redis before any other check. 0: off.',
    int(0, 1_000_000),
  ),
  bucketUserBurst: setting(
    'BUCKET_USER_BURST',
    '',
    'Claims one buyer can send at once for one voucher (default: twice BUCKET_USER_RATE, two seconds\' worth).',
    intOrDerived(1, 1_000_000),
  ),
  ipRateLimit: setting(
    'IP_RATE_LIMIT',
    '0',
    'Requests to /api one client address may send per IP_RATE_WINDOW_MS, counted in each instance\'s memory (excess: 429 RATE_LIMITED). 0: off.',
    int(0, 100_000_000),
  ),
  ipRateWindowMs: setting('IP_RATE_WINDOW_MS', '1000', 'Window of IP_RATE_LIMIT.', int(100, 3_600_000)),
  trustedProxies: setting(
    'TRUSTED_PROXIES',
    '',
    'Load balancers / proxies (comma-separated addresses or CIDR ranges) whose X-Forwarded-For names the client address for IP_RATE_LIMIT; empty (the default): none, the socket address is the client.',
    addressList,
  ),
  soldOutCacheMs: setting(
    'SOLD_OUT_CACHE_MS',
    '500',
    'How long an instance answers SOLD_OUT from memory after Redis said a voucher is sold out (units coming back clear it sooner, via pub/sub). 0: off.',
    int(0, 60_000),
  ),
  sseMaxPerUser: setting(
    'SSE_MAX_PER_USER',
    '8',
    'Event streams (/api/orders/events, the console\'s live views) one user may hold open in one API process; past it: 429 TOO_MANY_STREAMS with Retry-After.',
    int(1, 10_000),
  ),
  sseMaxStreams: setting(
    'SSE_MAX_STREAMS',
    '20000',
    'Event streams one API process holds open in all; past it: 429 TOO_MANY_STREAMS with Retry-After.',
    int(1, 1_000_000),
  ),
  claimTokenTtlMs: setting(
    'CLAIM_TOKEN_TTL_MS',
    '30000',
    'Lifetime of a claim token (vouchers with claimToken: true), never past the end of the sale.',
    int(1_000, 3_600_000),
  ),
  httpRequestTimeoutMs: setting(
    'HTTP_REQUEST_TIMEOUT_MS',
    '10000',
    'A request whose headers and body have not arrived by then is answered 408 and closed (slow clients).',
    int(1_000, 600_000),
  ),
  httpKeepAliveTimeoutMs: setting(
    'HTTP_KEEP_ALIVE_TIMEOUT_MS',
    '72000',
    'An idle keep-alive connection is closed after this long; keep it above the load balancer\'s idle timeout (often 60 s).',
    int(1_000, 3_600_000),
  ),
  httpMaxHeaderBytes: setting(
    'HTTP_MAX_HEADER_BYTES',
    '8192',
    'Largest request head (request line and headers) accepted; larger: 431 HEADERS_TOO_LARGE.',
    int(1_024, 65_536),
  ),
  shutdownGraceMs: setting(
    'SHUTDOWN_GRACE_MS',
    '1000',
    'On SIGTERM, how long the API keeps serving (answers carry Connection: close) before it stops listening and closes idle connections, so clients on keep-alive connections are not reset mid-request.',
    int(0, 120_000),
  ),
  overloadEventLoopDelayMs: setting(
    'OVERLOAD_EVENT_LOOP_DELAY_MS',
    '0',
    'Mean event-loop delay (sampled each second) above which the API answers 503 UNAVAILABLE with Retry-After instead of queueing; 0: off. ' +
      'Set it (e.g. 500) where the API has its cores to itself: on a shared machine, CPU taken by other processes looks the same.',
    int(0, 60_000),
  ),
  overloadHeapUsedMb: setting(
    'OVERLOAD_HEAP_USED_MB',
    '',
    'V8 heap in use above which the API answers 503 UNAVAILABLE with Retry-After (default: 90% of the heap limit). 0: off.',
    intOrDerived(0, 1_048_576),
  ),
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

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether HOST keeps the API on this machine: 127.0.0.0/8, ::1 (IPv4-mapped too) or localhost. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && loopback.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Refuses (ConfigError) a server that others can reach with a secret anyone may know or guess:
 * whoever holds JWT_SECRET signs admin tokens. On loopback (a developer machine, the demo, the
 * tests) the built-in secret is fine.
 */
export function checkServingSecret({ host, jwtSecret }: Pick<Config, 'host' | 'jwtSecret'>): void {
  if (isLoopbackHost(host)) return;
  const bytes = Buffer.byteLength(jwtSecret, 'utf8');
  const weak =
    jwtSecret === DEV_JWT_SECRET ? 'is the built-in development secret' : bytes < MIN_SERVING_SECRET_BYTES ? `is ${bytes} bytes long` : null;
  if (weak === null) return;
  throw new ConfigError(
    `JWT_SECRET ${weak} and HOST ${host} is not a loopback address: anyone could sign an admin token; ` +
      `set JWT_SECRET to a random secret of at least ${MIN_SERVING_SECRET_BYTES} bytes`,
  );
}

const REDACTED = '<redacted>';

/** `raw` with the password of its URL (if it is one with a password) replaced; the user stays. */
function withoutPassword(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return raw;
  }
  if (u.password === '') return raw;
  return `${u.protocol}//${u.username}:${REDACTED}@${u.host}${u.pathname}${u.search}${u.hash}`;
}

/** The configuration as `seckill config` prints it: the JWT secret and every password in a URL redacted. */
export function redactedConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) out[key] = typeof value === 'string' ? withoutPassword(value) : value;
  return { ...out, jwtSecret: REDACTED };
}

/** The command that writes docs/configuration.md (test/docs/configuration-doc.test.ts keeps it current). */
export const CONFIGURATION_DOC_COMMAND = 'node --import tsx scripts/configuration-doc.ts > docs/configuration.md';

/** One table cell: "|" would split the row, and "<" would open an HTML tag on a rendered page. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/</g, '&lt;');

/** docs/configuration.md, made from the settings themselves (also `seckill config --markdown`). */
export function configurationDoc(): string {
  const rows = Object.values(settings).map((s) => `| \`${s.env}\` | ${s.default === '' ? 'empty' : `\`${cell(s.default)}\``} | ${cell(s.doc)} |`);
  return `> Generated from \`src/config.ts\` by \`${CONFIGURATION_DOC_COMMAND}\`: change a setting there, then run that command.

# Configuration

Every setting is an environment variable, read once at start-up by \`src/config.ts\` (nothing else
reads \`process.env\`). An unset or empty variable takes the default; where the default is empty,
the meaning says what empty does. An invalid value stops start-up with one line naming the
variable (exit code 2). \`seckill config\` prints the configuration a process would run with (the
JWT secret and the password of every URL redacted).

Where a setting decides what a guarantee is worth (\`ADMIT_DURABILITY\`, \`SHARDS\`, the token
buckets, \`SHUTDOWN_GRACE_MS\`), [operations.md](operations.md) says what was measured with it.

| variable | default | meaning |
| --- | --- | --- |
${rows.join('\n')}`;
}
