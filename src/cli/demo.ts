// `seckill demo`: a real flash sale on this machine, end to end. It starts the API and the workers
// in this process (own database and key prefix), then runs the bench engine against it: many
// distinct buyers, each with their own token, race over HTTP for a few units (some retry with the
// same Idempotency-Key, some try again with a new one); half of the winners pay, the others let
// their orders expire; both stores are audited after the sale and again after the expiry.
import { buildApp } from '../app.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { runBench } from '../loadgen/bench.js';
import { mintCredentials } from '../loadgen/credentials.js';
import { int } from '../loadgen/format.js';
import { runText } from '../loadgen/text-report.js';
import { count } from './bench.js';
import { createLogger } from '../logger.js';

export interface DemoOptions {
  big?: boolean;
  stock?: string;
  buyers?: string;
}

const CONNECTIONS = 256;
const FIRST_BUYER = 1_000_001n;

/** The demo keeps its own database and key prefix so it never touches real data. */
function demoConfig(config: Config): Config {
  const url = new URL(config.databaseUrl);
  url.pathname = `${url.pathname.slice(1)}_demo`;
  return { ...config, databaseUrl: url.toString(), redisPrefix: `${config.redisPrefix}-demo`, port: 0, logLevel: 'warn' };
}

export async function demo(baseConfig: Config, options: DemoOptions): Promise<void> {
  const stock = options.stock === undefined ? (options.big ? 10_000 : 100) : count('stock', options.stock, 1);
  const buyers = options.buyers === undefined ? (options.big ? 100_000 : 1_000) : count('buyers', options.buyers, 1);
  // Long enough for the sale to end before the first unpaid order expires.
  const paymentTimeoutSeconds = options.big ? 60 : 5;
  const config = demoConfig(baseConfig);
  const container = await createContainer(config, createLogger(config.logLevel), { migrate: true });
  const app = await buildApp(container.appDeps);
  try {
    await container.startWorkers();
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    console.log(
      `\nFlash sale: ${int(stock)} units for ${int(buyers)} buyers (${CONNECTIONS} at a time), API and workers at ${url}` +
        `\n(database ${new URL(config.databaseUrl).pathname.slice(1)}, Redis prefix ${config.redisPrefix}). Half of the winners pay;` +
        ` the others let their order expire after ${paymentTimeoutSeconds} s.\n`,
    );
    const run = await runBench({
      url,
      credentials: await mintCredentials({ secret: config.jwtSecret, buyers, firstUserId: FIRST_BUYER, ttlSeconds: 3600 }),
      kind: 'seckill',
      stock,
      paymentTimeoutSeconds,
      repeatShare: 0.2,
      sameKeyShare: 0.5,
      seed: Date.now() % 2 ** 31,
      connections: CONNECTIONS,
      requestTimeoutMs: 30_000,
      payShare: 0.5,
      drainTimeoutMs: 120_000,
      progress: process.stderr,
    });
    console.log(`\n${runText(run)}\n`);
    console.log(run.verdict.ok ? 'PASS: no oversell, nothing lost, no duplicates, in Redis and in MariaDB.\n' : 'FAIL: see the checks above.\n');
    process.exitCode = run.verdict.ok ? 0 : 1;
  } finally {
    await app.close();
    await container.close();
  }
}
