// `seckill demo`: a real flash sale on this machine, end to end. It starts the API and the workers
// in this process (own database and key prefix), then runs the bench engine against it: many
// distinct buyers, each with their own token, race over HTTP for a few units (some retry with the
// same Idempotency-Key, some try again with a new one); the shop confirms half of the orders as
// paid through the Stripe webhook, the others expire, and one payment arrives after its order
// expired (kept as refund_due); both stores are audited after the sale and again after the expiry. The
// console and store URLs are printed before the sale, and --keep leaves the service up afterwards.
import { buildApp } from '../app.js';
import { ttlWithin } from '../auth/tokens.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { dialectOf } from '../infra/db/dialect.js';
import { runBench } from '../loadgen/bench.js';
import { mintCredentials } from '../loadgen/credentials.js';
import { Deployment } from '../loadgen/deployment.js';
import { int } from '../loadgen/format.js';
import { runText } from '../loadgen/text-report.js';
import { count } from './bench.js';
import { createLogger } from '../logger.js';
import { demoQueue } from './demo-queue.js';
import { demoConfig, demoLinks } from './demo-setup.js';

export interface DemoOptions {
  big?: boolean;
  stock?: string;
  buyers?: string;
  /** Keep the API and workers up after the verdict, until SIGINT / SIGTERM (scripts/demo.sh: DEMO_KEEP=1). */
  keep?: boolean;
  /** Listen on this port (default: any free one). */
  port?: string;
  /** A queued drop instead (demo-queue.ts). */
  queue?: boolean;
}

const CONNECTIONS = 256;
const DATABASE_NAMES = { mysql: 'MariaDB', postgres: 'PostgreSQL' } as const;
const FIRST_BUYER = 1_000_001n;
/** 19.99 in DEFAULT_CURRENCY. */
const DEMO_PRICE = 1999;

/** Resolves at the first SIGINT or SIGTERM (the handlers replace the default exit meanwhile). */
function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export async function demo(baseConfig: Config, options: DemoOptions): Promise<void> {
  const stock = options.stock === undefined ? (options.big ? 10_000 : 100) : count('stock', options.stock, 1);
  const buyers = options.buyers === undefined ? (options.big ? 100_000 : 1_000) : count('buyers', options.buyers, 1);
  if (options.queue) return demoQueue(baseConfig, { stock, buyers });
  // Long enough for the sale to end before the first unpaid order expires.
  const paymentTimeoutSeconds = options.big ? 60 : 5;
  const config = demoConfig(baseConfig);
  const container = await createContainer(config, createLogger(config.logLevel), { migrate: true });
  const app = await buildApp(container.appDeps);
  try {
    await container.startWorkers();
    const port = options.port === undefined ? 0 : count('port', options.port, 0);
    const url = await app.listen({ port, host: '127.0.0.1' });
    const credentials = await mintCredentials({
      secret: config.jwtSecret,
      buyers,
      firstUserId: FIRST_BUYER,
      // Its own API refuses tokens longer than JWT_MAX_TTL_SECONDS.
      ttlSeconds: ttlWithin(3600, config.jwtMaxTtlSeconds),
    });
    // Created here rather than by the bench, so that its store page can be named before the sale.
    const setup = new Deployment(url, credentials.admin);
    const voucher = await setup.createVoucher({ kind: 'seckill', stock, paymentTimeoutSeconds, price: DEMO_PRICE }).finally(() => setup.close());
    console.log(
      `\nFlash sale: ${int(stock)} units for ${int(buyers)} buyers (${CONNECTIONS} at a time), API and workers at ${url}` +
        `\n(database ${new URL(config.databaseUrl).pathname.slice(1)}, Redis prefix ${config.redisPrefix}). The shop confirms half of the` +
        ` orders as paid through the Stripe webhook; the others expire after ${paymentTimeoutSeconds} s, and one payment arrives late.\n${demoLinks(url, voucher.id)}\n`,
    );
    const run = await runBench({
      url,
      credentials,
      voucherId: voucher.id,
      kind: 'seckill',
      stock,
      paymentTimeoutSeconds,
      repeatShare: 0.2,
      sameKeyShare: 0.5,
      seed: Date.now() % 2 ** 31,
      connections: CONNECTIONS,
      requestTimeoutMs: 30_000,
      payShare: 0.5,
      stripeSecret: config.stripeWebhookSecret,
      drainTimeoutMs: 120_000,
      progress: process.stderr,
    });
    console.log(`\n${runText(run)}\n`);
    const database = DATABASE_NAMES[dialectOf(container.db).name];
    console.log(run.verdict.ok ? `PASS: no oversell, nothing lost, no duplicates, in Redis and in ${database}.\n` : 'FAIL: see the checks above.\n');
    process.exitCode = run.verdict.ok ? 0 : 1;
    if (options.keep) {
      console.log(`The service stays up at ${url} (Ctrl-C to stop).\n${demoLinks(url, voucher.id)}\n`);
      await untilStopped();
    }
  } finally {
    await app.close();
    await container.close();
  }
}
