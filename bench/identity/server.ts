// The target of bench/identity/run.ts in its own process: the app as `seckill serve` builds it
// (API only, no workers: the claims' stream entries wait, so the process does nothing but answer),
// with JWT_JWKS_URL set, on a throw-away database with one voucher of ample stock.
//   started by run.ts with BENCH_DATABASE_URL, BENCH_REDIS_URL, BENCH_PREFIX, BENCH_JWKS_URL,
//   BENCH_SECRET and an IPC channel
// Sends {type:'ready', port, voucherId}; answers {type:'cpu'} with {type:'cpu', us} (its own
// user + system time) and {type:'check'} with {type:'check', sold, buyers} (Redis: units taken, buyers counted); on
// {type:'stop'} (or when the channel closes) removes its database and keys and exits.
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { deleteKeys } from '../../support/redis-keys.js';

const STOCK = 10_000_000;

const config = loadConfig({
  REDIS_URL: process.env.BENCH_REDIS_URL!,
  DATABASE_URL: process.env.BENCH_DATABASE_URL!,
  REDIS_PREFIX: process.env.BENCH_PREFIX!,
  JWT_SECRET: process.env.BENCH_SECRET!,
  JWT_JWKS_URL: process.env.BENCH_JWKS_URL!,
  LOG_LEVEL: 'silent',
  // Every buyer sends many claims from one address: what is measured is the token, not the limits.
  IP_RATE_LIMIT: '0',
  BUCKET_USER_RATE: '0',
});
const c = await createContainer(config, pino({ level: 'silent' }), { migrate: true });
const app = await buildApp(c.appDeps);
const created = await app.inject({
  method: 'POST',
  url: '/api/vouchers',
  headers: { authorization: `Bearer ${await c.tokens.sign({ userId: 1n, admin: true }, 600)}` },
  payload: { title: 'bench identity', kind: 'seckill', stock: STOCK, perUserLimit: 1, beginAt: new Date().toISOString(), endAt: new Date(Date.now() + 86_400_000).toISOString() },
});
if (created.statusCode !== 201) throw new Error(`voucher creation failed: ${created.statusCode} ${created.body}`);
const voucherId = created.json().id as string;
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('no TCP address');

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await app.close();
  await deleteKeys(c.redis, c.keys.pattern());
  await c.close();
  await dropDatabase(config.databaseUrl);
  process.exit(0);
}
process.on('message', (m: { type: string }) => {
  if (m.type === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send!({ type: 'cpu', us: user + system });
  }
  if (m.type === 'check') {
    const id = BigInt(voucherId);
    void Promise.all([c.redis.hget(c.keys.voucher(id), 'stock'), c.redis.hlen(c.keys.buyers(id))]).then(([stock, buyers]) =>
      process.send!({ type: 'check', sold: STOCK - Number(stock), buyers }),
    );
  }
  if (m.type === 'stop') void stop();
});
process.on('disconnect', () => void stop());
process.send!({ type: 'ready', port: address.port, voucherId });
