// One benchmark target in its own process, so that the load generator never shares its event loop.
//   node --import tsx bench/admission/server.ts <scenario>    (started by run.ts, see protocol.ts)
// Prints {"type":"ready",...}, then answers the commands read from stdin. On `stop`, when stdin
// closes or on a signal, it removes what it created (its Redis keys and its database) and exits.
import cluster from 'node:cluster';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { forkProcesses, type Processes } from '../../src/cli/processes.js';
import { exitOnSignal } from '../../src/cli/shutdown.js';
import { type Config, loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { createRedis, redisReady } from '../../src/infra/redis/connections.js';
import { processCpuUs } from '../../src/loadgen/machine.js';
import { createLogger } from '../../src/logger.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { startTracing } from '../../src/tracing/tracing.js';
import { CLUSTER_PROCESSES, type Command, DURABILITY_KNOBS, durabilityKnobOf, parseScenario, type Scenario, type ServerEnv, type ServerMessage, traceRatioOf } from './protocol.js';

const PROFILE_DIR = fileURLToPath(new URL('./profiles/', import.meta.url));
/** No run sells this out (the API caps stock at 10,000,000). */
const ADMISSION_STOCK = 10_000_000;
/** Both buckets on, refusing nobody: one request per user, and far more claims/s than one process answers. */
const GENEROUS_BUCKETS = { BUCKET_VOUCHER_RATE: '10000000', BUCKET_USER_RATE: '10' };
/** Buys the sold-out voucher's only unit; outside the driver's users (1..tokens). */
const SOLD_OUT_BUYER = 999_999_999_999n;

const send = (message: ServerMessage) => process.stdout.write(`${JSON.stringify(message)}\n`);

interface Target {
  app: FastifyInstance;
  path: string;
  stock(): Promise<number | null>;
  cleanup(): Promise<void>;
}

/** The floor: Fastify 5 with one route that answers what an admission answers, and nothing else. */
function bareTarget(): Target {
  const app = Fastify({ logger: false });
  app.post('/api/vouchers/:id/orders', async (_request, reply) => reply.code(202).send({ orderId: '1', status: 'processing' }));
  return { app, path: '/api/vouchers/1/orders', stock: async () => null, cleanup: async () => {} };
}

/** The configuration every process of the app target reads (the same in `+cluster` children). */
function benchConfig(scenario: Scenario): Config {
  const env = process.env as Partial<ServerEnv>;
  if (!env.BENCH_NAME || !env.BENCH_JWT_SECRET || !env.BENCH_REDIS_URL || !env.BENCH_MYSQL_SERVER) {
    throw new Error('BENCH_* environment missing (start this through run.ts)');
  }
  return loadConfig({
    REDIS_URL: env.BENCH_REDIS_URL,
    DATABASE_URL: `${env.BENCH_MYSQL_SERVER}/${env.BENCH_NAME}`,
    REDIS_PREFIX: env.BENCH_NAME,
    JWT_SECRET: env.BENCH_JWT_SECRET,
    LOG_LEVEL: 'silent',
    ...(scenario.knobs.includes('buckets') ? GENEROUS_BUCKETS : {}),
    ADMIT_DURABILITY: DURABILITY_KNOBS[durabilityKnobOf(scenario) ?? 'private'].durability,
    ...tracingEnv(scenario, env.BENCH_OTLP_URL),
  });
}

/** A trace knob's settings: the standard variables, as an operator sets them. */
function tracingEnv(scenario: Scenario, otlpUrl: string | undefined): Record<string, string> {
  const ratio = traceRatioOf(scenario);
  if (ratio === undefined) return {};
  if (!otlpUrl) throw new Error('BENCH_OTLP_URL missing for a trace knob');
  return { OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) };
}

/** The app as `seckill serve` builds it, with the scenario's knobs applied. */
async function benchApp(c: Container, scenario: Scenario): Promise<FastifyInstance> {
  let claims = c.appDeps.claims;
  if (scenario.knobs.includes('stub-claim')) {
    let n = 0;
    claims = { ...claims, claimers: { ...claims.claimers, seckill: async () => ({ orderId: String(++n), status: 'processing', fresh: true }) } };
  }
  const app = await buildApp({ ...c.appDeps, claims });
  if (scenario.knobs.includes('worker')) await c.startPipeline();
  return app;
}

/** The real application, wired as `seckill serve` wires it, with one open seckill voucher. */
async function appTarget(scenario: Scenario): Promise<Target> {
  const config = benchConfig(scenario);
  let c: Container | null = null;
  const cleanup = async () => {
    await c?.close();
    // A fresh connection, after close(): releasing the worker lease writes a key of our prefix.
    const redis = createRedis(config, createLogger('silent'), 'bench-cleanup');
    try {
      await redisReady(redis, 10_000);
      await deleteKeys(redis, `${config.redisPrefix}:*`);
    } finally {
      await redis.quit();
    }
    await dropDatabase(config.databaseUrl);
  };
  try {
    await startTracing(config);
    c = await createContainer(config, createLogger(config.logLevel), { migrate: true });
    // With +cluster, this app only sets the voucher up; the children answer the load.
    const app = scenario.knobs.includes('cluster') ? await buildApp(c.appDeps) : await benchApp(c, scenario);

    const bearer = async (userId: bigint, admin: boolean) => ({ authorization: `Bearer ${await c!.tokens.sign({ userId, admin }, 3600)}` });
    const created = await app.inject({
      method: 'POST',
      url: '/api/vouchers',
      headers: await bearer(1n, true),
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
      const sold = await app.inject({ method: 'POST', url: path, headers: await bearer(SOLD_OUT_BUYER, false) });
      if (sold.statusCode !== 202) throw new Error(`selling the only unit failed: ${sold.statusCode} ${sold.body}`);
    }
    const redis = c.redis;
    const voucherKey = c.keys.voucher(BigInt(voucherId));
    const stock = async () => {
      const raw = await redis.hget(voucherKey, 'stock');
      return raw === null ? null : Number(raw);
    };
    return { app, path, stock, cleanup };
  } catch (err) {
    await cleanup().catch(() => {});
    throw err;
  }
}

/** CPU profile of the measured window only (startup, setup and warm-up stay out of it). */
function profiler(label: string) {
  let session: Session | null = null;
  return {
    async start() {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 200 }); // µs
      await session.post('Profiler.start');
    },
    async stop(): Promise<string | null> {
      if (!session) return null;
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = null;
      mkdirSync(PROFILE_DIR, { recursive: true });
      const file = `${PROFILE_DIR}${label.replace(/\+/g, '_')}-${Date.now()}.cpuprofile`;
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}

/** Where the load goes: the target's own app, or the children of a `+cluster` server. */
interface Listener {
  port: number;
  /** CPU time (user + system, µs) of every process that answers. */
  cpuUs(): number;
  close(): Promise<void>;
}

const ownCpuUs = () => {
  const cpu = process.cpuUsage();
  return cpu.user + cpu.system;
};

async function listenHere(app: FastifyInstance): Promise<Listener> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  return { port: address.port, cpuUs: ownCpuUs, close: () => app.close() };
}

/** CLUSTER_PROCESSES children (see `child`) listening on one port, as `seckill serve` forks them. */
async function listenInChildren(): Promise<Listener> {
  const processes: Processes = forkProcesses(CLUSTER_PROCESSES, createLogger('error'));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let listening = 0;
      cluster.on('listening', (_worker, address) => ++listening === CLUSTER_PROCESSES && resolve(address.port));
      void processes.failed.then(() => reject(new Error('a cluster child failed to start')));
    });
    return {
      port,
      cpuUs: () => processes.pids().reduce((sum, pid) => sum + processCpuUs(pid), ownCpuUs()),
      close: async () => void (await processes.stop()),
    };
  } catch (err) {
    await processes.stop();
    throw err;
  }
}

/** A `+cluster` child: the same app on the voucher its primary set up; stops on SIGTERM. */
async function child(scenario: Scenario): Promise<void> {
  let c: Container | null = null;
  if (scenario.base !== 'bare') c = await createContainer(benchConfig(scenario), createLogger('silent'), { migrate: false });
  const app = c ? await benchApp(c, scenario) : bareTarget().app;
  exitOnSignal(createLogger('silent'), async () => {
    await app.close();
    await c?.close();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
}

async function main(): Promise<void> {
  const scenario = parseScenario(process.argv[2] ?? '');
  const target = scenario.base === 'bare' ? bareTarget() : await appTarget(scenario);

  let listener: Listener | null = null;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        await listener?.close();
        await target.app.close();
        await target.cleanup();
        send({ type: 'stopped' });
      } catch (err) {
        send({ type: 'error', message: `cleanup failed: ${(err as Error).message}` });
        process.exitCode = 1;
      } finally {
        // A socket the load generator left half-open must not keep us alive.
        setTimeout(() => process.exit(), 200).unref();
      }
    })());
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());

  try {
    listener = scenario.knobs.includes('cluster') ? await listenInChildren() : await listenHere(target.app);
  } catch (err) {
    await target.cleanup().catch(() => {});
    throw err;
  }
  send({ type: 'ready', port: listener.port, path: target.path, stock: await target.stock() });

  const prof = profiler(scenario.label);
  const handle = async (command: Command): Promise<ServerMessage | null> => {
    switch (command) {
      case 'state':
        return { type: 'state', stock: await target.stock(), cpuUs: listener!.cpuUs() };
      case 'profile-start':
        if (scenario.knobs.includes('cluster')) throw new Error('--profile covers one process: not with +cluster');
        await prof.start();
        return { type: 'profile', file: null };
      case 'profile-stop':
        return { type: 'profile', file: await prof.stop() };
      case 'stop':
        await stop();
        return null;
      default:
        return { type: 'error', message: `unknown command "${String(command)}"` };
    }
  };
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    handle(line.trim() as Command).then(
      (message) => message && send(message),
      (err: Error) => send({ type: 'error', message: err.message }),
    );
  });
  // The driver went away: clean up rather than leave a database behind.
  lines.on('close', () => void stop());
}

if (cluster.isWorker) {
  // stdout carries the primary's protocol: a child reports on stderr.
  child(parseScenario(process.argv[2] ?? '')).catch((err: Error) => {
    console.error(err.stack ?? err.message);
    process.exit(1);
  });
} else {
  main().catch((err: Error) => {
    send({ type: 'error', message: err.stack ?? err.message });
    process.exit(1);
  });
}
