// Payment-timer benchmark: N unpaid orders fall due within a window (default 100,000 in one
// minute), and the expiry workers must release each within 2 s of its deadline — in both stores.
//   node --import tsx bench/expiry/run.ts [--orders 100000] [--spread 60] [--vouchers 16]
//        [--workers 1] [--batch 500] [--poll 500]
// --spread 0 makes every order fall due at the same instant (the worst burst). The orders are
// inserted directly as stored pending orders (with their per-user quantities, DB stock and Redis
// state to match, as the pipeline would have left them), so only expiry is measured. Lateness is
// `updated_at - expires_at` of each expired row (both database time). A throw-away database and
// Redis prefix are removed at the end. See README.md in this directory for recorded figures.
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { type Container, createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { cpuMeter, readDurability, readMachine } from '../drain/probes.js';
import { readFlags } from '../support/flags.js';
import { percentile } from '../support/stats.js';

// Time to insert the orders before the first deadline (about 55 µs an order here, doubled).
const leadMs = (orders: number) => 3_000 + Math.ceil(orders * 0.11);
const CHUNK = 2_000;
const TARGET_MS = 2_000;

const { spread: spreadS, poll: pollMs, ...counts } = readFlags({ orders: 100_000, spread: 60, vouchers: 16, workers: 1, batch: 500, poll: 500 }, { spread: 0, poll: 10 });
const o = { ...counts, spreadS, pollMs };

const databaseServer = process.env.BENCH_DATABASE_SERVER || process.env.BENCH_MYSQL_SERVER || 'mysql://root@127.0.0.1:3306';
const databaseUrl = `${databaseServer}/bench_expiry_${process.pid}`;
const configFor = (n: number) =>
  loadConfig({
    REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    DATABASE_URL: databaseUrl,
    REDIS_PREFIX: `be${process.pid}`,
    LOG_LEVEL: 'warn',
    EXPIRY_BATCH: String(o.batch),
    EXPIRY_POLL_MS: String(o.pollMs),
    CONSUMER_NAME: `bench-expiry-${process.pid}-${n}`,
  });

/** Vouchers sold out to N distinct users whose orders are stored and unpaid, due in the window. */
async function seed(c: Container): Promise<{ voucherIds: bigint[]; firstDue: number }> {
  const now = Date.now();
  const begin = new Date(now - 60_000);
  const end = new Date(now + 3_600_000);
  const perVoucher = Math.ceil(o.orders / o.vouchers);
  const voucherIds = Array.from({ length: o.vouchers }, (_, k) => BigInt(1_000 + k));
  const firstDue = now + leadMs(o.orders);
  let orderId = 10_000_000n;
  for (const [k, id] of voucherIds.entries()) {
    const count = Math.min(perVoucher, o.orders - k * perVoucher);
    await c.db
      .insertInto('vouchers')
      .values({
        id, title: `bench expiry ${k}`, kind: 'seckill', initial_stock: count, stock: 0, begin_at: begin, end_at: end,
        per_user_limit: 1, payment_timeout_seconds: 60, waitlist: false, claim_token: false,
      })
      .execute();
    await c.scripts.warm({
      voucherId: id, stock: 0, beginMs: begin.getTime(), endMs: end.getTime(), perUserLimit: 1, inflight: 0,
      expireAtSeconds: Math.ceil(end.getTime() / 1000) + 3600, waitlistCap: 0,
    });
    for (let i = 0; i < count; i += CHUNK) {
      const users = Array.from({ length: Math.min(CHUNK, count - i) }, (_, j) => String(k * perVoucher + i + j + 1));
      const dueAt = (j: number) => new Date(firstDue + (o.orders > 1 ? ((k * perVoucher + i + j) / (o.orders - 1)) * o.spreadS * 1000 : 0));
      await c.db
        .insertInto('orders')
        .values(users.map((u, j) => ({
          id: String(orderId++), voucher_id: id, user_id: u, quantity: 1, status: 'pending_payment' as const,
          created_at: new Date(now), expires_at: dueAt(j),
        })))
        .execute();
      await c.db.insertInto('user_quantities').values(users.map((u) => ({ voucher_id: id, user_id: u, quantity: 1 }))).execute();
      await c.redis.hset(c.keys.buyers(id), Object.fromEntries(users.map((u) => [u, 1])));
    }
  }
  return { voucherIds, firstDue };
}

async function main() {
  const log = pino({ level: 'warn' }, process.stderr);
  const base = await createContainer(configFor(0), log, { migrate: true });
  const others: Container[] = [];
  try {
    const machine = await readMachine(base.redis);
    const durability = await readDurability(base.db, base.redis);
    console.log(`machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memGiB} GiB, node ${machine.node}, redis ${machine.redis}, ${durability.version} (commit flushes: ${durability.commitFlushes ? 'yes' : 'NO'}); load ${machine.loadavg.join(' ')}`);
    console.log(`${o.orders} unpaid orders over ${o.vouchers} vouchers, due within ${o.spreadS} s; ${o.workers} worker(s), EXPIRY_BATCH=${o.batch}, EXPIRY_POLL_MS=${o.pollMs}`);
    const seedStart = performance.now();
    const { voucherIds, firstDue } = await seed(base);
    console.log(`seeded in ${Math.round(performance.now() - seedStart)} ms; first deadline in ${Math.max(0, firstDue - Date.now())} ms`);
    if (Date.now() > firstDue) console.log('WARNING: seeding took longer than the lead time: the first orders were due before the workers started');

    for (let n = 1; n < o.workers; n++) others.push(await createContainer(configFor(n), log));
    const cpu = cpuMeter(base.db);
    for (const c of [base, ...others]) c.startExpiry();
    const started = performance.now();
    const pending = async () =>
      Number((await base.db.selectFrom('orders').select(sql<number>`count(*)`.as('n')).where('status', '=', 'pending_payment').executeTakeFirstOrThrow()).n) +
      Number((await base.db.selectFrom('release_outbox').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()).n);
    while ((await pending()) > 0) await new Promise((r) => setTimeout(r, 250));
    const wallMs = performance.now() - started;
    const used = cpu();

    const late = (
      await base.db
        .selectFrom('orders')
        .select(dialectOf(base.db).msBetween(sql.ref('expires_at'), sql.ref('updated_at')).as('ms'))
        .where('status', '=', 'expired')
        .execute()
    ).map((r) => Number(r.ms)).sort((a, b) => a - b);
    const problems: string[] = [];
    if (late.length !== o.orders) problems.push(`${late.length} of ${o.orders} expired`);
    for (const id of voucherIds) {
      const row = await base.db.selectFrom('vouchers').select(['stock', 'initial_stock']).where('id', '=', id.toString()).executeTakeFirstOrThrow();
      const redisStock = Number(await base.redis.hget(base.keys.voucher(id), 'stock'));
      if (row.stock !== row.initial_stock) problems.push(`voucher ${id}: DB stock ${row.stock} != ${row.initial_stock}`);
      if (redisStock !== row.stock) problems.push(`voucher ${id}: Redis stock ${redisStock} != DB ${row.stock}`);
      if ((await base.redis.hlen(base.keys.buyers(id))) !== 0) problems.push(`voucher ${id}: Redis still counts buyers`);
    }
    const held = await base.db.selectFrom('user_quantities').select(sql<number>`sum(quantity)`.as('n')).executeTakeFirstOrThrow();
    if (Number(held.n) !== 0) problems.push(`user quantities still hold ${held.n}`);

    const fmt = (ms: number) => `${Math.round(ms)} ms`;
    console.log(`lateness (expired at − due at): p50 ${fmt(percentile(late, 50))}, p99 ${fmt(percentile(late, 99))}, max ${fmt(late.at(-1) ?? 0)}  (target: max <= ${TARGET_MS} ms: ${(late.at(-1) ?? Infinity) <= TARGET_MS ? 'MET' : 'NOT MET'})`);
    console.log(`wall ${fmt(wallMs)} from start to the last unit back in Redis; cpu s bench/database/redis/other ${[used.bench, used.database, used.redis, used.other].map((x) => x.toFixed(1)).join('/')}`);
    console.log(problems.length ? `CHECK FAILED: ${problems.slice(0, 10).join('; ')}` : 'check: every order expired once; DB stock, Redis stock, quantities and buyers all back to the initial state; outbox empty');
    process.exitCode = problems.length || (late.at(-1) ?? Infinity) > TARGET_MS ? 1 : 0;
  } finally {
    for (const c of others) await c.close();
    await deleteKeys(base.redis, base.keys.pattern());
    await base.close();
    await dropDatabase(databaseUrl);
  }
}

await main();
