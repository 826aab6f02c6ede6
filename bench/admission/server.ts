// One benchmark target, in its own process so that the load generator never shares its event loop.
//   node --import tsx bench/admission/server.ts <scenario>      e.g. bare, admission, soldout,
//                                                               admission+sync-hmac (protocol.ts)
// Environment: ServerEnv in protocol.ts (run.ts sets it). Prints {"type":"ready",...} on stdout,
// then answers the commands of protocol.ts read from stdin. When stdin closes or a signal arrives
// it removes what it created (the Redis keys of its prefix, its database) and exits.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { createGuards } from '../../src/auth/guards.js';
import { loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { createRedis } from '../../src/infra/redis/client.js';
import { createLogger } from '../../src/logger.js';
import type { SeckillClaim } from '../../src/seckill/claim.js';
import { type Command, parseScenario, type Scenario, type ServerEnv, type ServerMessage } from './protocol.js';
import { joseWithImportedKey, syncHmac } from './variants.js';

const PROFILE_DIR = fileURLToPath(new URL('./profiles/', import.meta.url));
/** Large enough that no run sells out (the API caps stock at 10,000,000). */
const ADMISSION_STOCK = 10_000_000;
/** Buys the single unit of the sold-out voucher; outside the driver's user range (1..tokens). */
const SOLD_OUT_BUYER = 999_999_999_999n;
const BARE_BODY = { orderId: '1', status: 'processing' };

function send(message: ServerMessage): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function env(): ServerEnv {
  const read = (name: keyof ServerEnv) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set (start this through run.ts)`);
    return value;
  };
  return {
    BENCH_NAME: read('BENCH_NAME'),
    BENCH_JWT_SECRET: read('BENCH_JWT_SECRET'),
    BENCH_REDIS_URL: read('BENCH_REDIS_URL'),
    BENCH_MYSQL_SERVER: read('BENCH_MYSQL_SERVER'),
  };
}

interface Target {
  app: FastifyInstance;
  path: string;
  voucherId: string | null;
  stock(): Promise<number | null>;
  cleanup(): Promise<void>;
}

/** The floor: Fastify 5 with one route answering what an admission answers, and nothing else. */
async function bareTarget(): Promise<Target> {
  const app = Fastify({ logger: false });
  app.post('/api/vouchers/:id/orders', async (_request, reply) => reply.code(202).send(BARE_BODY));
  return { app, path: '/api/vouchers/1/orders', voucherId: null, stock: async () => null, cleanup: async () => {} };
}

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

/** The real application, wired as `seckill serve` wires it, with one open seckill voucher. */
async function appTarget(scenario: Scenario, e: ServerEnv): Promise<Target> {
  const config = loadConfig({
    REDIS_URL: e.BENCH_REDIS_URL,
    DATABASE_URL: `${e.BENCH_MYSQL_SERVER}/${e.BENCH_NAME}`,
    REDIS_PREFIX: e.BENCH_NAME,
    JWT_SECRET: e.BENCH_JWT_SECRET,
    LOG_LEVEL: 'silent',
  });
  let container: Container | null = null;
  const cleanup = async () => {
    await container?.close();
    // A fresh connection: closing the container releases its worker lease, which writes a key.
    const redis = createRedis(config.redisUrl, { connectionName: 'bench-cleanup' });
    try {
      await deleteKeys(redis, `${config.redisPrefix}:*`);
    } finally {
      await redis.quit();
    }
    await dropDatabase(config.databaseUrl);
  };
  try {
    container = await createContainer(config, createLogger(config.logLevel), { migrate: true });
    const c = container;
    const knobs = new Set(scenario.knobs);

    // Knobs swap one dependency each; everything else is the app exactly as `seckill serve` builds it.
    let { guards, claims } = c.appDeps;
    if (knobs.has('jose-key')) guards = createGuards(await joseWithImportedKey(config.jwtSecret, c.tokens));
    if (knobs.has('sync-hmac')) guards = createGuards(syncHmac(config.jwtSecret, c.tokens));
    if (knobs.has('stub-claim')) {
      let n = 0n;
      claims = { ...claims, claimSeckill: async (claim: SeckillClaim) => ({ orderId: String(++n), quantity: claim.quantity, fresh: true }) };
    }
    // ioredis reads this option on every command, so it can be switched off after connecting.
    if (knobs.has('no-autopipeline')) c.redis.options.enableAutoPipelining = false;
    const app = await buildApp({ ...c.appDeps, guards, claims });

    const admin = await c.tokens.sign({ userId: 1n, admin: true }, 3600);
    const created = await app.inject({
      method: 'POST',
      url: '/api/vouchers',
      headers: { authorization: `Bearer ${admin}` },
      payload: {
        title: `bench ${scenario.label}`,
        kind: 'seckill',
        stock: scenario.base === 'soldout' ? 1 : ADMISSION_STOCK,
        perUserLimit: 1,
        beginAt: new Date(Date.now() - 60_000).toISOString(),
        endAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });
    if (created.statusCode !== 201) throw new Error(`voucher creation failed: ${created.statusCode} ${created.body}`);
    const voucherId = (created.json() as { id: string }).id;
    const path = `/api/vouchers/${voucherId}/orders`;
    if (scenario.base === 'soldout') {
      const buyer = await c.tokens.sign({ userId: SOLD_OUT_BUYER, admin: false }, 3600);
      const sold = await app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${buyer}` } });
      if (sold.statusCode !== 202) throw new Error(`selling the only unit failed: ${sold.statusCode} ${sold.body}`);
    }
    const stock = async () => {
      const raw = await c.redis.hget(c.keys.voucher(BigInt(voucherId)), 'stock');
      return raw === null ? null : Number(raw);
    };
    return { app, path, voucherId, stock, cleanup };
  } catch (err) {
    await cleanup().catch(() => {});
    throw err;
  }
}

/** CPU profile of the measured window only (setup and warm-up stay out of it). */
function profiler(label: string) {
  let session: Session | null = null;
  return {
    async start() {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      // 200 µs: enough samples in 10 s to rank functions that cost a few percent.
      await session.post('Profiler.setSamplingInterval', { interval: 200 });
      await session.post('Profiler.start');
    },
    async stop(): Promise<string | null> {
      if (!session) return null;
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = null;
      mkdirSync(PROFILE_DIR, { recursive: true });
      const file = `${PROFILE_DIR}${label}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}

async function main(): Promise<void> {
  const scenario = parseScenario(process.argv[2] ?? '');
  const target = scenario.base === 'bare' ? await bareTarget() : await appTarget(scenario, env());

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        await target.app.close();
        await target.cleanup();
        send({ type: 'stopped' });
        process.exitCode = 0;
      } catch (err) {
        send({ type: 'error', message: `cleanup failed: ${(err as Error).message}` });
        process.exitCode = 1;
      } finally {
        // Stray handles (a socket the load generator left half-open) must not keep us alive.
        setTimeout(() => process.exit(), 200).unref();
      }
    })());
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());

  try {
    await target.app.listen({ port: 0, host: '127.0.0.1' });
  } catch (err) {
    await target.cleanup().catch(() => {});
    throw err;
  }
  const address = target.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  send({ type: 'ready', scenario: scenario.label, port: address.port, path: target.path, voucherId: target.voucherId, stock: await target.stock() });

  const prof = profiler(scenario.label.replace(/\+/g, '_'));
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const command = line.trim() as Command;
    const reply = async (): Promise<ServerMessage | null> => {
      switch (command) {
        case 'state': {
          const cpu = process.cpuUsage();
          return { type: 'state', stock: await target.stock(), cpuUs: cpu.user + cpu.system };
        }
        case 'profile-start':
          await prof.start();
          return { type: 'profile', file: null };
        case 'profile-stop':
          return { type: 'profile', file: await prof.stop() };
        case 'stop':
          await stop();
          return null;
        default:
          return { type: 'error', message: `unknown command "${line}"` };
      }
    };
    reply().then(
      (message) => message && send(message),
      (err: Error) => send({ type: 'error', message: err.message }),
    );
  });
  // The driver went away (crashed, killed): clean up rather than leave a database behind.
  lines.on('close', () => void stop());
}

main().catch((err: Error) => {
  send({ type: 'error', message: err.stack ?? err.message });
  process.exit(1);
});
