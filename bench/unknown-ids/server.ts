// The target of bench/unknown-ids/run.ts in its own process (so that the load generator never shares
// its event loop): the app as `seckill serve` builds it, on a throw-away database with a few
// vouchers, counting every statement its kysely instance runs.
//   started by run.ts with BENCH_DATABASE_URL, BENCH_REDIS_URL, BENCH_PREFIX and an IPC channel
// Sends {type:'ready', port}; answers {type:'queries'} with {type:'queries', n}; on {type:'stop'}
// (or when the channel closes) removes its database and keys and exits.
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { deleteKeys } from '../../support/redis-keys.js';

const VOUCHERS = 3;

const config = loadConfig({
  REDIS_URL: process.env.BENCH_REDIS_URL!,
  DATABASE_URL: process.env.BENCH_DATABASE_URL!,
  REDIS_PREFIX: process.env.BENCH_PREFIX!,
  JWT_SECRET: 'bench-unknown-ids',
  LOG_LEVEL: 'silent',
  // One address sends everything here; a flood from many addresses is what is measured.
  IP_RATE_LIMIT: '0',
});
const c = await createContainer(config, pino({ level: 'silent' }), { migrate: true });

// Every statement of the app's pool passes through its executor (transactions excepted: a GET runs none).
let queries = 0;
const executor = c.db.getExecutor();
const execute = executor.executeQuery.bind(executor);
executor.executeQuery = (query, ...rest) => {
  queries++;
  return execute(query, ...rest);
};

const app = await buildApp(c.appDeps);
const admin = `Bearer ${await c.tokens.sign({ userId: 1n, admin: true }, 600)}`;
for (let i = 0; i < VOUCHERS; i++) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/vouchers',
    headers: { authorization: admin },
    payload: { title: `bench ${i}`, kind: 'seckill', stock: 10, beginAt: new Date().toISOString(), endAt: new Date(Date.now() + 3_600_000).toISOString() },
  });
  if (res.statusCode !== 201) throw new Error(`voucher creation failed: ${res.statusCode} ${res.body}`);
}
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
  if (m.type === 'queries') process.send!({ type: 'queries', n: queries });
  if (m.type === 'stop') void stop();
});
process.on('disconnect', () => void stop());
process.send!({ type: 'ready', port: address.port });
