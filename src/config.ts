// The one typed configuration schema. Every setting: env var, default, doc line, parser.
// process.env is read here and nowhere else.

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

const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!(values as string[]).includes(raw)) throw new Error(`expected one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

const nonEmpty = (pattern?: RegExp, what?: string): Parser<string> => (raw) => {
  if (raw.length === 0) throw new Error('must not be empty');
  if (pattern && !pattern.test(raw)) throw new Error(`expected ${what}, got "${raw}"`);
  return raw;
};

export const settings = {
  port: setting('PORT', '3000', 'HTTP port of `seckill serve`.', int(0, 65535)),
  host: setting('HOST', '127.0.0.1', 'Address `seckill serve` listens on.', nonEmpty()),
  redisUrl: setting('REDIS_URL', 'redis://127.0.0.1:6379', 'Redis server (redis:// or rediss://).', url('redis:', 'rediss:')),
  databaseUrl: setting(
    'DATABASE_URL',
    'mysql://root@127.0.0.1:3306/seckill',
    'MariaDB/MySQL database; the database is created if missing.',
    url('mysql:', 'mariadb:'),
  ),
  jwtSecret: setting(
    'JWT_SECRET',
    'dev-only-secret-change-me',
    'HS256 secret for bearer tokens. Set your own in production.',
    nonEmpty(),
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
    'Number of order streams; a voucher lives on shard id mod SHARDS. Fixed for the life of the data.',
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

/** Markdown table of every setting, for the README (`seckill config --markdown`). */
export function configTable(): string {
  const rows = Object.values(settings).map((s) => `| \`${s.env}\` | ${s.default ? `\`${s.default}\`` : '(derived)'} | ${s.doc} |`);
  return ['| variable | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}
