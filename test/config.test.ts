import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, settings } from '../src/config.js';
import { redactedConfig } from '../src/config/redaction.js';
import { checkServingSecret, isLoopbackHost } from '../src/config/serving-secret.js';
import { derivedConfirmTimeoutMs } from '../src/events/amqp-publisher.js';

type Key = keyof typeof settings;

interface Case {
  /** A value other than the default, and what it parses to. */
  good: [raw: string, parsed: unknown];
  /** Values start-up must refuse; empty only for free-text settings (see FREE_TEXT). */
  bad: string[];
}

// What the free-text settings (no bad values) must take verbatim. They cannot refuse an empty
// value either: empty means "use the default".
const FREE_TEXT = 'any text: ü / , | 1';

// One case per setting: a setting added without one fails "covers every setting".
const cases: Record<Key, Case> = {
  port: { good: ['8080', 8080], bad: ['eighty', '70000', '-1', '80.5', '0x50'] },
  host: { good: ['0.0.0.0', '0.0.0.0'], bad: [] },
  apiProcesses: { good: ['3', 3], bad: ['257', '-1', 'all'] },
  redisUrl: { good: ['rediss://:pw@cache.example:6380/2', 'rediss://:pw@cache.example:6380/2'], bad: ['http://localhost', 'localhost:6379'] },
  redisClusterNodes: {
    good: ['10.0.0.1:7000, [::1]:7001', [{ host: '10.0.0.1', port: 7000 }, { host: '::1', port: 7001 }]],
    bad: ['10.0.0.1', '10.0.0.1:0', '10.0.0.1:70000', 'a b:7000'],
  },
  redisSentinels: { good: ['s1:26379,s2:26379', [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }]], bad: ['s1', 's1:26379,:26379'] },
  redisSentinelName: { good: ['shop-master', 'shop-master'], bad: [] },
  redisCommandTimeoutMs: { good: ['250', 250], bad: ['49', '60001'] },
  redisCheckIntervalMs: { good: ['50', 50], bad: ['49', 'soon'] },
  admitDurability: { good: ['replica', 'replica'], bad: ['disk', 'FSYNC'] },
  admitReplicas: { good: ['2', 2], bad: ['0', '17'] },
  admitWaitTimeoutMs: { good: ['60000', 60_000], bad: ['0', '60001'] },
  databaseUrl: { good: ['postgres://postgres@db:5432/shop', 'postgres://postgres@db:5432/shop'], bad: ['not a url', 'sqlite://shop.db'] },
  jwtSecret: { good: ['s3cret', 's3cret'], bad: [] },
  jwtMaxTtlSeconds: { good: ['0', 0], bad: ['-1', '31536001', '1h'] },
  redisPrefix: { good: ['prod.eu-1', 'prod.eu-1'], bad: ['has space', 'x'.repeat(33), 'a{b}'] },
  logLevel: { good: ['debug', 'debug'], bad: ['loud', 'INFO'] },
  shards: { good: ['8', 8], bad: ['0', '1025'] },
  workerLeaseTtlMs: { good: ['3000', 3000], bad: ['2999', '600001'] },
  consumerName: { good: ['api-7', 'api-7'], bad: [] },
  dbStatementTimeoutMs: { good: ['2500', 2500], bad: ['99', '600001'] },
  pipelineLanes: { good: ['1', 1], bad: ['0', '1025'] },
  pipelineBatch: { good: ['10000', 10_000], bad: ['0', '10001'] },
  pipelineBlockMs: { good: ['10', 10], bad: ['9', '60001'] },
  claimIdleMs: { good: ['100', 100], bad: ['99', '3600001'] },
  maxDeliveries: { good: ['1', 1], bad: ['0', '1001'] },
  restoreWindowSeconds: { good: ['0', 0], bad: ['-1', '3601'] },
  expiryPollMs: { good: ['10', 10], bad: ['9', '60001'] },
  expiryBatch: { good: ['1', 1], bad: ['0', '10001'] },
  waitlistMax: { good: ['10000000', 10_000_000], bad: ['0', '10000001'] },
  corsOrigins: {
    good: ['https://shop.example.com/, http://127.0.0.1:8080', ['https://shop.example.com', 'http://127.0.0.1:8080']],
    bad: ['shop.example.com', 'https://shop.example.com/path'],
  },
  eventsAmqpUrl: { good: ['amqps://u:p@mq.example:5671/shop', 'amqps://u:p@mq.example:5671/shop'], bad: ['http://127.0.0.1:5672', 'mq.example'] },
  eventsExchange: { good: ['shop:orders.v2', 'shop:orders.v2'], bad: ['has space', 'x'.repeat(256)] },
  paymentMode: { good: ['external', 'external'], bad: ['stripe', 'EXTERNAL'] },
  defaultCurrency: { good: ['EUR', 'EUR'], bad: ['eur', 'EURO'] },
  stripeWebhookSecret: { good: [FREE_TEXT, FREE_TEXT], bad: [] },
  jwtJwksUrl: { good: ['https://id.example/.well-known/jwks.json', 'https://id.example/.well-known/jwks.json'], bad: ['ftp://id.example/jwks', 'id.example'] },
  jwtIssuer: { good: [FREE_TEXT, FREE_TEXT], bad: [] },
  jwtAudience: { good: [FREE_TEXT, FREE_TEXT], bad: [] },
  jwtUserClaim: { good: ['uid', 'uid'], bad: [] },
  jwtRolesClaim: { good: ['realm_access', 'realm_access'], bad: [] },
  webhookUrl: { good: ['https://shop.example/hooks', 'https://shop.example/hooks'], bad: ['amqp://shop.example', 'shop.example'] },
  webhookSecret: { good: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], bad: ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_not base64'] },
  webhookMaxAgeSeconds: { good: ['60', 60], bad: ['59', '31536001'] },
  eventsPollMs: { good: ['10', 10], bad: ['0', '60001'] },
  eventsBatch: { good: ['10000', 10_000], bad: ['0', '10001'] },
  eventsConfirmTimeoutMs: { good: ['60000', 60_000], bad: ['10', '600001', 'never'] },
  claimLockTtlMs: { good: ['100', 100], bad: ['99', '600001'] },
  reconcileIntervalMs: { good: ['0', 0], bad: ['-1', '86400001'] },
  bucketVoucherRate: { good: ['10000000', 10_000_000], bad: ['-1', '10000001'] },
  bucketVoucherBurst: { good: ['1', 1], bad: ['0', '10000001'] },
  bucketUserRate: { good: ['0', 0], bad: ['-1', '1000001'] },
  bucketUserBurst: { good: ['1000000', 1_000_000], bad: ['0', '1000001'] },
  ipRateLimit: { good: ['100000000', 100_000_000], bad: ['-1', '100000001'] },
  ipRateWindowMs: { good: ['100', 100], bad: ['99', '3600001'] },
  trustedProxies: {
    good: ['10.0.0.0/8, ::1, loopback', ['10.0.0.0/8', '::1', 'loopback']],
    bad: ['proxy.example', '10.0.0.0/8/1', '10.0.0.0/abc', '300.0.0.1'],
  },
  soldOutCacheMs: { good: ['0', 0], bad: ['-1', '60001'] },
  sseMaxPerUser: { good: ['1', 1], bad: ['0', '10001'] },
  sseMaxStreams: { good: ['50000', 50_000], bad: ['0', 'many'] },
  claimTokenTtlMs: { good: ['1000', 1000], bad: ['999', '3600001'] },
  httpRequestTimeoutMs: { good: ['600000', 600_000], bad: ['999', '600001'] },
  httpKeepAliveTimeoutMs: { good: ['1000', 1000], bad: ['999', '3600001'] },
  httpMaxHeaderBytes: { good: ['65536', 65_536], bad: ['1023', '65537'] },
  shutdownGraceMs: { good: ['0', 0], bad: ['-1', '120001'] },
  overloadEventLoopDelayMs: { good: ['500', 500], bad: ['-1', '60001'] },
  overloadHeapUsedMb: { good: ['0', 0], bad: ['-1', '1048577', 'lots'] },
  otelEndpoint: { good: ['http://collector:4318', 'http://collector:4318'], bad: ['collector:4318', 'grpc://collector:4317'] },
  otelTracesEndpoint: { good: ['https://collector/v1/traces', 'https://collector/v1/traces'], bad: ['ftp://collector'] },
  otelServiceName: { good: ['shop-seckill', 'shop-seckill'], bad: [] },
  otelTracesSampler: { good: ['parentbased_traceidratio', 'parentbased_traceidratio'], bad: ['ratio', 'ALWAYS_ON'] },
  otelBspScheduleDelayMs: { good: ['200', 200], bad: ['9', 'soon'] },
  otelTracesSamplerArg: { good: ['0.01', 0.01], bad: ['1.5', '-0.1', 'half', '1e-2'] },
};

const entries = Object.entries(settings) as [Key, (typeof settings)[Key]][];

function assertRejected(env: string, value: string): void {
  assert.throws(
    () => loadConfig({ [env]: value }),
    (err: Error) => {
      assert.ok(err instanceof ConfigError, `${env}=${value}: ${err.constructor.name}, not a ConfigError`);
      assert.match(err.message, new RegExp(`^invalid ${env}: \\S`));
      assert.doesNotMatch(err.message, /\n/);
      return true;
    },
    `${env}=${JSON.stringify(value)} was accepted`,
  );
}

describe('configuration', () => {
  it('covers every setting with a good and a bad value', () => {
    assert.deepEqual(Object.keys(cases).sort(), Object.keys(settings).sort());
  });

  for (const [key, s] of entries) {
    describe(s.env, () => {
      it('takes its own default, the same as when it is unset or empty', () => {
        const unset = loadConfig({})[key];
        assert.deepEqual(s.parse(s.default), unset);
        assert.deepEqual(loadConfig({ [s.env]: s.default })[key], unset);
        assert.deepEqual(loadConfig({ [s.env]: '' })[key], unset);
      });

      const { good, bad } = cases[key];
      it(`applies ${JSON.stringify(good[0])} and leaves every other setting at its default`, () => {
        const [raw, parsed] = good;
        assert.notEqual(raw, s.default, 'the good value must differ from the default');
        const config = loadConfig({ [s.env]: raw });
        assert.deepEqual(config[key], parsed);
        assert.deepEqual({ ...config, [key]: undefined }, { ...loadConfig({}), [key]: undefined });
      });

      if (bad.length === 0) {
        it('takes any non-empty text as it is', () => {
          assert.equal(loadConfig({ [s.env]: FREE_TEXT })[key], FREE_TEXT);
        });
      }
      for (const value of bad) {
        it(`refuses ${JSON.stringify(value)} with a one-line message naming the variable`, () => assertRejected(s.env, value));
      }
    });
  }

  it('keeps the defaults the external contract names', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(config.databaseUrl, 'mysql://root@127.0.0.1:3306/seckill');
    assert.equal(config.redisPrefix, 'sk');
    assert.equal(config.logLevel, 'info');
    assert.equal(config.admitDurability, 'memory');
    assert.equal(config.eventsExchange, 'seckill.orders');
    assert.equal(config.eventsAmqpUrl, '');
    assert.deepEqual(config.corsOrigins, []);
    assert.equal(config.shards, 16);
  });

  it('reads only the listed variables', () => {
    const lookalikes = { SECKILL_PORT: 'eighty', port: 'eighty', PORT_: 'eighty', SECKILL_SHARDS: '0', SK_REDIS_PREFIX: 'has space' };
    assert.deepEqual(loadConfig(lookalikes), loadConfig({}));
    assert.equal(loadConfig({ ...lookalikes, PORT: '8080' }).port, 8080);
  });

  it('reads process.env when given no environment, and only then', () => {
    const before = process.env.SHARDS;
    process.env.SHARDS = '7';
    try {
      assert.equal(loadConfig().shards, 7);
      assert.equal(loadConfig({}).shards, 16);
    } finally {
      if (before === undefined) delete process.env.SHARDS;
      else process.env.SHARDS = before;
    }
  });

  it('runs one API process per CPU core when API_PROCESSES is 0', () => {
    assert.equal(loadConfig({ API_PROCESSES: '0' }).apiProcesses, availableParallelism());
  });

  it('leaves the derived settings to their users when unset', () => {
    const config = loadConfig({});
    assert.equal(config.eventsConfirmTimeoutMs, null);
    assert.equal(config.bucketVoucherBurst, null);
    assert.equal(config.bucketUserBurst, null);
    assert.equal(config.overloadHeapUsedMb, null);
  });

  it('gives the broker longer to confirm a relay round when EVENTS_BATCH is larger', () => {
    assert.equal(derivedConfirmTimeoutMs(loadConfig({}).eventsBatch), 9_000);
    assert.equal(derivedConfirmTimeoutMs(loadConfig({ EVENTS_BATCH: '10000' }).eventsBatch), 25_000);
  });

  it('documents every setting in one line of its own', () => {
    for (const s of Object.values(settings)) assert.match(s.doc, /^[^\n]{10,}$/, `doc line of ${s.env}`);
  });
});

describe('the JWT secret of a server others can reach', () => {
  const serving = (env: Record<string, string>) => () => checkServingSecret(loadConfig(env));
  const strong = 'x'.repeat(32);

  it('tells loopback addresses from the others', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) {
      assert.equal(isLoopbackHost(host), true, host);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', 'example.com', 'localhost.example.com']) {
      assert.equal(isLoopbackHost(host), false, host);
    }
  });

  it('when HOST is loopback, then the built-in secret and short ones are fine (a developer machine, the demo, the tests)', () => {
    assert.doesNotThrow(serving({}));
    assert.doesNotThrow(serving({ HOST: '::1', JWT_SECRET: 's' }));
    assert.doesNotThrow(serving({ HOST: 'localhost' }));
  });

  it('when HOST is not loopback, then the built-in secret or one under 32 bytes is refused with one line naming JWT_SECRET; 32 bytes are enough', () => {
    for (const [env, why] of [
      [{ HOST: '0.0.0.0' }, /^JWT_SECRET is the built-in development secret and HOST 0\.0\.0\.0 is not a loopback address: anyone could sign an admin token; set JWT_SECRET to a random secret of at least 32 bytes$/],
      [{ HOST: '::', JWT_SECRET: 'x'.repeat(31) }, /^JWT_SECRET is 31 bytes long and HOST :: is not a loopback address: anyone could sign an admin token/],
      // Bytes, not characters: 'é' is 2 bytes of UTF-8.
      [{ HOST: '10.0.0.1', JWT_SECRET: 'é'.repeat(15) }, /^JWT_SECRET is 30 bytes long/],
    ] as const) {
      assert.throws(serving(env), (err: Error) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, why);
        assert.doesNotMatch(err.message, /\n/);
        return true;
      });
    }
    assert.doesNotThrow(serving({ HOST: '0.0.0.0', JWT_SECRET: strong }));
    assert.doesNotThrow(serving({ HOST: '0.0.0.0', JWT_SECRET: 'é'.repeat(16) }));
  });
});

describe('the configuration as printed', () => {
  it('redacts the JWT secret and the password of every URL, keeping the user and the rest', () => {
    const printed = redactedConfig(
      loadConfig({
        JWT_SECRET: 'top-secret',
        DATABASE_URL: 'mysql://shop:db%2Fpass@db.example:3306/shop?ssl=true',
        REDIS_URL: 'rediss://:redis-pass@cache.example:6380/2',
        EVENTS_AMQP_URL: 'amqps://mq-user:mq-pass@mq.example:5671/shop',
        STRIPE_WEBHOOK_SECRET: 'whsec_stripe-signing',
        WEBHOOK_SECRET: 'whsec_b3V0Z29pbmc=',
      }),
    );
    assert.equal(printed.jwtSecret, '<redacted>');
    assert.equal(printed.databaseUrl, 'mysql://shop:<redacted>@db.example:3306/shop?ssl=true');
    assert.equal(printed.redisUrl, 'rediss://:<redacted>@cache.example:6380/2');
    assert.equal(printed.eventsAmqpUrl, 'amqps://mq-user:<redacted>@mq.example:5671/shop');
    assert.equal(printed.stripeWebhookSecret, '<redacted>');
    assert.equal(printed.webhookSecret, '<redacted>');
    for (const secret of ['top-secret', 'db%2Fpass', 'redis-pass', 'mq-pass', 'stripe-signing', 'b3V0Z29pbmc']) assert.ok(!JSON.stringify(printed).includes(secret), secret);
  });

  it('leaves URLs without a password and every other setting as they are', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://postgres@db:5432/shop', CONSUMER_NAME: 'api:7', CORS_ORIGINS: 'https://shop.example.com' });
    assert.deepEqual(redactedConfig(config), { ...config, jwtSecret: '<redacted>' });
  });
});
