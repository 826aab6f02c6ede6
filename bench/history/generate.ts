// Fills a fresh database with a year of a busy shop (year.ts) through the schema the migrations
// make, by bulk loading (load.ts), and warms the live vouchers' Redis state through the engine's
// own warm path (VoucherRedisState.rewarm) under a key prefix of its own.
//   node --import tsx bench/history/generate.ts --database mysql://root@127.0.0.1:3306/history_year
//        [--orders 10000000] [--vouchers 20000] [--users N] [--live 100] [--redis URL] [--prefix P]
//        [--private-server mariadb|postgres [--buffer-pool 4G] [--keep]]
// Without --redis it warms into a private redis-server of its own, which it stops at the end (the
// state is rebuilt by the same path whenever a server starts on the database). The database is
// left in place; it must not exist before. With --private-server, --database is a name only (by
// default history_year) on a database server of its own (private-server.ts), which is stopped and
// removed at the end unless --keep leaves it running with the year.
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createCore } from '../../src/composition/core.js';
import { createDb, migrateDatabase } from '../../src/infra/db/database.js';
import { kindOf } from '../../src/vouchers/kinds.js';
import { startPrivateRedis } from '../../support/private-redis.js';
import { integer, readFlags } from '../support/flags.js';
import { createLoader, nullable, timeText } from './load.js';
import { DEFAULT_BUFFER_POOL, parseKind, parseMiB, type PrivateServer, readServerSettings, settingsLine, startPrivateServer } from './private-server.js';
import { activeUnits, buyersOf, holds, initialStock, OrderIds, ordersOf, planYear, quantityOf, statusOf, type Year } from './year.js';

export interface GenerateOptions {
  databaseUrl: string;
  orders: number;
  vouchers: number;
  live: number;
  users?: number;
  /** Where to warm the live vouchers (null: do not warm). */
  redis: { url: string; prefix: string } | null;
  log?: (line: string) => void;
}

export interface Generated {
  year: Year;
  rows: Record<'vouchers' | 'orders' | 'user_quantities' | 'voucher_order_counts', number>;
  seconds: Record<'migrate' | 'vouchers' | 'orders' | 'userQuantities' | 'analyze' | 'warm' | 'total', number>;
  /** Order rows per second over the whole load (index builds included). */
  ordersPerSecond: number;
  /** Ids of interest for the measurements (decimal). */
  hotVoucher: string;
  liveVouchers: string[];
  longBuyer: string;
}

const RESERVED = new Set(['seckill', 'test', 'mysql', 'postgres', 'information_schema', 'performance_schema', 'sys', 'template0', 'template1']);

/** Whether the database named in `url` exists (asked on the server's own maintenance database). */
async function databaseExists(url: string): Promise<boolean> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  const postgres = /^postgres(ql)?:$/.test(u.protocol);
  u.pathname = postgres ? '/postgres' : '/information_schema';
  const db = createDb(u.toString(), 1);
  try {
    const { rows } = postgres
      ? await sql`select 1 from pg_database where datname = ${name}`.execute(db)
      : await sql`select 1 from information_schema.schemata where schema_name = ${name}`.execute(db);
    return rows.length > 0;
  } finally {
    await db.destroy();
  }
}

export async function assertFreshName(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (RESERVED.has(name.toLowerCase())) throw new Error(`refusing to fill database "${name}": give a name of its own`);
  if (await databaseExists(url)) throw new Error(`database "${name}" exists already: the generator fills only a fresh one`);
}

const seconds = (from: number) => Math.round(performance.now() - from) / 1000;

function* voucherLines(year: Year, active: number[]): Generator<string> {
  for (const v of year.vouchers) {
    const initial = initialStock(v, active[v.index]!);
    yield [
      v.id, `${v.live ? 'live' : 'sale'} ${v.index}`, v.kind, initial, initial - active[v.index]!, timeText(v.beginMs), timeText(v.endMs),
      v.perUserLimit, v.paymentTimeoutS, 0, 0, timeText(v.createdMs), v.orders, '\\N',
    ].join('\t') + '\n';
  }
}
const VOUCHER_COLUMNS = ['id', 'title', 'kind', 'initial_stock', 'stock', 'begin_at', 'end_at', 'per_user_limit', 'payment_timeout_seconds', 'waitlist', 'claim_token', 'created_at', 'version', 'segment_shards'];

function* orderLines(year: Year): Generator<string> {
  const ids = new OrderIds();
  for (const v of year.vouchers) {
    const voucherId = v.id.toString();
    for (const o of ordersOf(year, v, ids)) {
      yield `${o.id}\t${voucherId}\t${o.userId}\t${o.quantity}\t${o.status}\t${timeText(o.createdMs)}\t${timeText(o.expiresMs)}\t${timeText(o.paidMs)}\t${timeText(o.updatedMs)}\t${nullable(o.failureReason)}\t${nullable(o.idempotencyKey)}\n`;
    }
  }
}
const ORDER_COLUMNS = ['id', 'voucher_id', 'user_id', 'quantity', 'status', 'created_at', 'expires_at', 'paid_at', 'updated_at', 'failure_reason', 'idempotency_key'];

/** One row per buyer and voucher the buyer's order reached the database for; 0 once released. */
function* userQuantityLines(year: Year): Generator<string> {
  for (const v of year.vouchers) {
    const voucherId = v.id.toString();
    const buyer = buyersOf(year, v);
    for (let j = 0; j < v.orders; j++) {
      const status = statusOf(v, j);
      if (status === 'failed') continue;
      yield `${voucherId}\t${buyer(j)}\t${holds(status) ? quantityOf(v, j) : 0}\n`;
    }
  }
}

/** Each voucher's orders by status in one slot, where the schema keeps such counts. */
function* orderCountLines(year: Year): Generator<string> {
  for (const v of year.vouchers) {
    const counts = new Map<string, number>();
    for (let j = 0; j < v.orders; j++) counts.set(statusOf(v, j), (counts.get(statusOf(v, j)) ?? 0) + 1);
    for (const [status, n] of counts) yield `${v.id}\t${status}\t0\t${n}\n`;
  }
}

async function hasTable(databaseUrl: string, name: string): Promise<boolean> {
  const db = createDb(databaseUrl, 1);
  try {
    return (await db.introspection.getTables()).some((t) => t.name === name);
  } finally {
    await db.destroy();
  }
}

export async function generateYear(o: GenerateOptions): Promise<Generated> {
  const log = o.log ?? (() => {});
  const started = performance.now();
  await migrateDatabase(o.databaseUrl);
  const migrated = seconds(started);
  const year = planYear({ orders: o.orders, vouchers: o.vouchers, live: o.live, users: o.users, now: Date.now() });
  const loader = await createLoader(o.databaseUrl);
  const rows = { vouchers: 0, orders: 0, user_quantities: 0, voucher_order_counts: 0 };
  const t = { migrate: migrated, vouchers: 0, orders: 0, userQuantities: 0, analyze: 0, warm: 0, total: 0 };
  try {
    let at = performance.now();
    const active = year.vouchers.map(activeUnits);
    rows.vouchers = await loader.load('vouchers', VOUCHER_COLUMNS, voucherLines(year, active));
    t.vouchers = seconds(at);
    log(`vouchers: ${rows.vouchers} in ${t.vouchers} s`);
    at = performance.now();
    rows.orders = await loader.withoutSecondaryIndexes('orders', () => loader.load('orders', ORDER_COLUMNS, orderLines(year)));
    t.orders = seconds(at);
    log(`orders: ${rows.orders} in ${t.orders} s (${Math.round(rows.orders / Math.max(t.orders, 0.001))} rows/s, index builds included)`);
    at = performance.now();
    rows.user_quantities = await loader.load('user_quantities', ['voucher_id', 'user_id', 'quantity'], userQuantityLines(year));
    t.userQuantities = seconds(at);
    log(`user quantities: ${rows.user_quantities} in ${t.userQuantities} s`);
    if (await hasTable(o.databaseUrl, 'voucher_order_counts')) {
      at = performance.now();
      rows.voucher_order_counts = await loader.load('voucher_order_counts', ['voucher_id', 'status', 'slot', 'n'], orderCountLines(year));
      log(`order counts: ${rows.voucher_order_counts} in ${seconds(at)} s`);
    }
    at = performance.now();
    await loader.analyze(['vouchers', 'orders', 'user_quantities']);
    t.analyze = seconds(at);
  } finally {
    await loader.close();
  }
  const live = year.vouchers.filter((v) => v.live);
  if (o.redis) {
    const at = performance.now();
    const config = loadConfig({ DATABASE_URL: o.databaseUrl, REDIS_URL: o.redis.url, REDIS_PREFIX: o.redis.prefix, LOG_LEVEL: 'warn' });
    const core = await createCore(config, pino({ level: 'warn' }, process.stderr));
    try {
      for (const v of live) {
        const voucher = await core.directory.getStored(v.id);
        if (voucher && kindOf(voucher).redisGated) await core.redisState.rewarm(voucher);
      }
    } finally {
      await core.close();
    }
    t.warm = seconds(at);
    log(`warmed ${live.length} live vouchers in ${t.warm} s`);
  }
  t.total = seconds(started);
  return {
    year,
    rows,
    seconds: t,
    ordersPerSecond: Math.round(rows.orders / Math.max(t.orders, 0.001)),
    hotVoucher: year.vouchers[year.hot]!.id.toString(),
    liveVouchers: live.map((v) => v.id.toString()),
    longBuyer: String(year.longBuyer),
  };
}

/** The engine's invariants on the stored year: stock = initial − Σ active units, quantities = active units. */
export async function checkYear(databaseUrl: string): Promise<string[]> {
  const db = createDb(databaseUrl, 1);
  try {
    const problems: string[] = [];
    const { rows: stock } = await sql<{ n: number }>`select count(*) as n from vouchers v left join (
        select voucher_id, sum(quantity) as units from orders where status in ('paid', 'pending_payment') group by voucher_id
      ) a on a.voucher_id = v.id where v.stock <> v.initial_stock - coalesce(a.units, 0) or v.stock < 0`.execute(db);
    if (Number(stock[0]!.n)) problems.push(`${stock[0]!.n} vouchers whose stock is not initial − active units`);
    const { rows: held } = await sql<{ orders: number; quantities: number }>`select
        (select coalesce(sum(quantity), 0) from orders where status in ('paid', 'pending_payment')) as orders,
        (select coalesce(sum(quantity), 0) from user_quantities) as quantities`.execute(db);
    if (Number(held[0]!.orders) !== Number(held[0]!.quantities)) problems.push(`active units ${held[0]!.orders} != user quantities ${held[0]!.quantities}`);
    const { rows: over } = await sql<{ n: number }>`select count(*) as n from user_quantities q join vouchers v on v.id = q.voucher_id where q.quantity > v.per_user_limit`.execute(db);
    if (Number(over[0]!.n)) problems.push(`${over[0]!.n} buyers over their per-user limit`);
    const { rows: failed } = await sql<{ n: number }>`select count(*) as n from orders where status = 'failed' and failure_reason is null`.execute(db);
    if (Number(failed[0]!.n)) problems.push(`${failed[0]!.n} failed orders without a reason`);
    if (await hasTable(databaseUrl, 'voucher_order_counts')) {
      const { rows: counts } = await sql<{ n: number }>`select count(*) as n from (select voucher_id, status, count(*) as n from orders group by voucher_id, status) o
          left join (select voucher_id, status, sum(n) as n from voucher_order_counts group by voucher_id, status) c on c.voucher_id = o.voucher_id and c.status = o.status
          where c.n is null or c.n <> o.n`.execute(db);
      if (Number(counts[0]!.n)) problems.push(`${counts[0]!.n} order counts that differ from the orders`);
    }
    return problems;
  } finally {
    await db.destroy();
  }
}

async function main(): Promise<void> {
  const v = readFlags(
    {
      database: null,
      orders: 10_000_000,
      vouchers: 20_000,
      users: null,
      live: 100,
      redis: null,
      prefix: null,
      check: true,
      'no-check': false,
      'private-server': null,
      'buffer-pool': DEFAULT_BUFFER_POOL,
      keep: false,
    },
    { orders: 0, live: 0 },
  );
  const dbName = v.database ?? 'history_year';
  if (v['private-server'] && !/^\w+$/.test(dbName)) throw new Error('with --private-server, --database is a database name (default history_year)');
  if (!v['private-server'] && !v.database) throw new Error('--database mysql://…/<name> or postgres://…/<name> is required');
  const own = v.redis ? null : await startPrivateRedis();
  let privateServer: PrivateServer | null = null;
  try {
    if (v['private-server']) privateServer = await startPrivateServer({ kind: parseKind(v['private-server']), bufferPoolMiB: parseMiB(v['buffer-pool']), keep: v.keep });
    const database = privateServer ? `${privateServer.url}/${dbName}` : v.database!;
    const prefix = v.prefix ?? `history_${new URL(database).pathname.slice(1)}`;
    await assertFreshName(database);
    const g = await generateYear({
      databaseUrl: database,
      orders: v.orders,
      vouchers: v.vouchers,
      live: v.live,
      users: v.users === undefined ? undefined : integer('users', v.users, 1),
      redis: { url: v.redis ?? own!.url, prefix },
      log: (line) => console.log(line),
    });
    console.log(`total ${g.seconds.total} s (migrations ${g.seconds.migrate} s, analyze ${g.seconds.analyze} s); ${g.year.users} buyers; hot voucher ${g.hotVoucher}; long-history buyer ${g.longBuyer}; Redis prefix ${prefix}`);
    console.log(`database: ${settingsLine(await readServerSettings(database, v.redis ?? own!.url))}`);
    if (!v['no-check']) {
      const at = performance.now();
      const problems = await checkYear(database);
      console.log(problems.length ? `CHECK FAILED: ${problems.join('; ')}` : `check (${seconds(at)} s): stock = initial − active units for every voucher; user quantities = active units; no buyer over the limit; every failed order has a reason; order counts (where kept) = the orders`);
      if (problems.length) process.exitCode = 1;
    }
  } finally {
    await own?.stop();
    privateServer?.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
