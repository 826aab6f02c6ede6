// The hot statements read through their index at a year's size, on the database of this pass
// (MariaDB, or PostgreSQL in scripts/test.sh's last pass). Each scenario runs the real code on a
// database of 200,000 orders (of 200 of 2,000 vouchers, by 20,000 buyers) and 50,000 unsent order
// events; every statement it sends that reads a table is EXPLAINed as it is sent: none may scan a
// large table in full, and each hot one must go through the index it was built for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledQuery, type DatabaseConnection, sql } from 'kysely';
import { createReconciler } from '../../../src/consistency/reconciler.js';
import { voucherStatsUseCase } from '../../../src/console/stats.js';
import { createAmqpPublisher } from '../../../src/events/amqp-publisher.js';
import { EventRelay } from '../../../src/events/event-relay.js';
import { createDb, type Db } from '../../../src/infra/db/database.js';
import { dialectOf } from '../../../src/infra/db/dialect.js';
import type { OrderEntry } from '../../../src/infra/redis/records.js';
import { createReleases } from '../../../src/lifecycle/releases.js';
import { cancelOrderUseCase, payOrderUseCase } from '../../../src/lifecycle/order-actions.js';
import { createEventOutbox, outboxBacklog } from '../../../src/orders/event-outbox.js';
import { getOrderUseCase } from '../../../src/orders/get-order.js';
import { createOrderRepository } from '../../../src/orders/repository.js';
import { storeOrders } from '../../../src/pipeline/store-orders.js';
import { startTestApp, suiteScope } from '../../support/helpers.js';
import { AMQP_URL, tapEvents } from '../../support/order-events.js';

const t = await startTestApp(suiteScope(), 'query_plans', { RECONCILE_INTERVAL_MS: '0' });
const db = t.c.db;
const dialect = dialectOf(db);

/** A year's vouchers; the orders are of the first SOLD. */
const VOUCHERS = 2_000;
const SOLD = 200;
const ORDERS_PER_VOUCHER = 1_000;
const USERS = 20_000;
const EVENTS = 50_000;
const ORDERS = SOLD * ORDERS_PER_VOUCHER;
/** Orders are created one a second up to now; the payment window is 15 minutes. */
const WINDOW_S = 900;

/** `seconds` (an SQL expression) before the statement's clock. */
const ago = (seconds: string) => (dialect.name === 'mysql' ? `now(3) - interval (${seconds}) second` : `statement_timestamp() - make_interval(secs => ${seconds})`);

/**
 * A shop after a year, in a few INSERT … SELECTs: 2,000 vouchers; order n (1…200,000) is of voucher
 * ⌈n / 1000⌉, its buyer spread over 20,000, created 200,000 − n seconds ago; 5% pending (all but
 * the last quarter-hour's due), 10% expired, 5% cancelled, 5% failed, the rest paid.
 */
async function seed(): Promise<void> {
  // A connection of its own, without DB_STATEMENT_TIMEOUT_MS: a statement here inserts 200,000 rows.
  const seeder = createDb(t.env.DATABASE_URL!, 1);
  try {
    await seedWith(seeder);
  } finally {
    await seeder.destroy();
  }
}

async function seedWith(seeder: Db): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(seeder);
  await run('create table plan_seq (i integer primary key)');
  await run(`insert into plan_seq (i) values ${Array.from({ length: VOUCHERS }, (_, i) => `(${i + 1})`).join(',')}`);
  await run(`insert into vouchers (id, title, kind, initial_stock, stock, begin_at, end_at, per_user_limit, payment_timeout_seconds)
    select i, 'voucher', 'common', 1000000, 1000000, ${ago('86400')}, ${ago('-86400')}, 1000, ${WINDOW_S} from plan_seq where i <= ${VOUCHERS}`);
  const n = `((v.i - 1) * ${ORDERS_PER_VOUCHER} + o.i)`;
  const status = `case o.i % 20 when 0 then 'pending_payment' when 1 then 'expired' when 2 then 'expired' when 3 then 'cancelled' when 4 then 'failed' else 'paid' end`;
  await run(`insert into orders (id, voucher_id, user_id, quantity, status, created_at, expires_at)
    select ${n}, v.i, 1 + (o.i * 7919 + v.i) % ${USERS}, 1, ${status}, ${ago(`${ORDERS} - ${n}`)}, ${ago(`${ORDERS} - ${n} - ${WINDOW_S}`)}
    from plan_seq v cross join plan_seq o where v.i <= ${SOLD} and o.i <= ${ORDERS_PER_VOUCHER}`);
  await run(`insert into user_quantities (voucher_id, user_id, quantity)
    select voucher_id, user_id, sum(quantity) from orders where status in ('pending_payment', 'paid') group by voucher_id, user_id`);
  await run(`insert into voucher_order_counts (voucher_id, status, slot, n) select voucher_id, status, 0, count(*) from orders group by voucher_id, status`);
  await run(`insert into order_events (order_id, voucher_id, user_id, type, quantity, status)
    select id, voucher_id, user_id, 'stored', quantity, status from orders where id <= ${EVENTS} order by id`);
  await run(dialect.name === 'mysql' ? 'analyze table vouchers, orders, user_quantities, voucher_order_counts, order_events' : 'analyze');
}

/**
 * One table read of a plan: the table (MariaDB names it by its alias in the statement, if any), how
 * (MariaDB's access type, PostgreSQL's node type), the indexes it goes through (none: the table
 * itself), and whether it reads the whole table.
 */
interface Access {
  table: string;
  alias?: string;
  how: string;
  indexes: string[];
  full: boolean;
}

/** MariaDB's EXPLAIN FORMAT=JSON: every `table` object (derived tables and the like left out). */
function mysqlAccesses(plan: unknown, out: Access[] = []): Access[] {
  if (Array.isArray(plan)) for (const p of plan) mysqlAccesses(p, out);
  else if (plan && typeof plan === 'object') {
    const node = plan as Record<string, unknown>;
    if (typeof node.table_name === 'string' && !node.table_name.startsWith('<')) {
      const how = String(node.access_type);
      out.push({ table: node.table_name, how, indexes: typeof node.key === 'string' ? [node.key] : [], full: how === 'ALL' });
    }
    for (const value of Object.values(node)) mysqlAccesses(value, out);
  }
  return out;
}

/** PostgreSQL's EXPLAIN (FORMAT JSON): every scan of a relation; a bitmap scan names the index under it. */
function postgresAccesses(plan: unknown, out: Access[] = []): Access[] {
  type Node = Record<string, unknown> & { Plans?: Node[] };
  // A bitmap heap scan's indexes are those of the bitmap index scans under it.
  const indexesBelow = (node: Node): string[] => [
    ...(typeof node['Index Name'] === 'string' ? [node['Index Name']] : []),
    ...(node['Relation Name'] === undefined ? (node.Plans ?? []).flatMap(indexesBelow) : []),
  ];
  const walk = (node: Node) => {
    const how = String(node['Node Type']);
    const table = node['Relation Name'];
    if (typeof table === 'string' && how !== 'ModifyTable') {
      const indexes = [...(typeof node['Index Name'] === 'string' ? [node['Index Name']] : []), ...(node.Plans ?? []).flatMap(indexesBelow)];
      out.push({ table, alias: node.Alias as string, how, indexes, full: how === 'Seq Scan' });
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  for (const root of plan as { Plan: Node }[]) walk(root.Plan);
  return out;
}

interface Planned {
  sql: string;
  accesses: Access[];
}

async function explain(connection: DatabaseConnection, query: CompiledQuery): Promise<Planned> {
  if (dialect.name === 'mysql') {
    const { rows } = await connection.executeQuery<{ EXPLAIN: string }>(CompiledQuery.raw(`explain format=json ${query.sql}`, [...query.parameters]));
    return { sql: query.sql, accesses: mysqlAccesses(JSON.parse(rows[0]!.EXPLAIN)) };
  }
  const { rows } = await connection.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  return { sql: query.sql, accesses: postgresAccesses(rows[0]!['QUERY PLAN']) };
}

/**
 * Runs `scenario` on a copy of the database handle that EXPLAINs each statement reading a table
 * just before it runs, on its connection (in its transaction, on the data it meets); returns the plans.
 */
async function plansOf(scenario: (explained: Db) => Promise<unknown>): Promise<Planned[]> {
  const plans: Planned[] = [];
  const explained = db.withoutPlugins();
  const executor = explained.getExecutor();
  const provide = executor.provideConnection.bind(executor);
  const explaining = (connection: DatabaseConnection): DatabaseConnection => ({
    executeQuery: async (query) => {
      if (/^\s*(select|update|delete)\b/i.test(query.sql)) plans.push(await explain(connection, query));
      return connection.executeQuery(query);
    },
    streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
  });
  Object.assign(executor, { provideConnection: (consumer: (c: DatabaseConnection) => Promise<unknown>) => provide((connection) => consumer(explaining(connection))) });
  await scenario(explained);
  return plans;
}

const BIG_TABLES = new Set(['orders', 'order_events', 'user_quantities', 'voucher_order_counts']);
const pk = (table: string) => (dialect.name === 'mysql' ? 'PRIMARY' : { user_quantities: 'user_quantities_pk', voucher_order_counts: 'voucher_order_counts_pk' }[table] ?? `${table}_pkey`);

const accessText = (a: Access) => `${a.table} ${a.how}${a.indexes.length ? ` on ${a.indexes.join(' + ')}` : ''}`;
const describePlans = (plans: Planned[]) => plans.map((p) => `${p.sql.replace(/\s+/g, ' ').slice(0, 160)}\n    → ${p.accesses.map(accessText).join('; ')}`).join('\n');

/**
 * Every large table is read through an index, and for each [statement, table, index] expected, the
 * statements matching it read `table` (or the alias the statement gives it) through `index`.
 */
function assertPlans(plans: Planned[], expected: [statement: RegExp, table: string, index: string | string[]][]): void {
  const scans = plans.filter((p) => p.accesses.some((a) => BIG_TABLES.has(a.table) && (a.full || a.indexes.length === 0)));
  assert.deepEqual(scans.map((p) => p.sql), [], `full scans:\n${describePlans(scans)}`);
  for (const [statement, table, index] of expected) {
    const matching = plans.filter((p) => statement.test(p.sql));
    assert.ok(matching.length > 0, `no statement matched ${statement}:\n${describePlans(plans)}`);
    const indexes = [index].flat();
    for (const p of matching) {
      const reads = p.accesses.filter((a) => a.table === table || a.alias === table);
      assert.ok(
        reads.length > 0 && reads.every((a) => a.indexes.length > 0 && a.indexes.every((i) => indexes.includes(i))),
        `${statement} should read ${table} through ${indexes.join(' or ')} only:\n${describePlans([p])}`,
      );
    }
  }
}

/** Matches a statement's SQL whatever the identifier quoting. */
const stmt = (pattern: string) => new RegExp(pattern.replaceAll(' ', '\\s+').replaceAll('"', '["`]?'), 'i');

await seed();

const caller = (userId: string | number) => ({ userId: BigInt(userId), admin: false });

describe('query plans at size', () => {
  it('when the pipeline stores a batch and then sees it again, then the stored-id lookup, voucher and quantity rows go by primary key', async () => {
    const shard = t.c.keys.shardOf(1n);
    const entries: OrderEntry[] = Array.from({ length: 500 }, (_, i) => ({
      shard, streamId: `1-${i}`, orderId: String(ORDERS + 1 + i), voucherId: BigInt(1 + (i % 4)), userId: String(1 + i * 37), quantity: 1, createdAt: new Date(), promoted: false, deliveries: 1,
    }));
    const plans = await plansOf(async (explained) => {
      await storeOrders(explained, entries);
      await storeOrders(explained, entries);
    });
    assertPlans(plans, [
      [stmt('select "id", "status", "failure_reason" from "orders" where "id" in'), 'orders', pk('orders')],
      [stmt('from "vouchers" where "id" in .* for update'), 'vouchers', pk('vouchers')],
      [stmt('update "vouchers" set "stock"'), 'vouchers', pk('vouchers')],
      [stmt('from user_quantities where \\(voucher_id = \\d+ and user_id in .* or \\(voucher_id'), 'user_quantities', pk('user_quantities')],
    ]);
  });

  it("when the payment timer sweeps, then the due orders come off (status, expires_at) and the release goes by primary keys", async () => {
    let expired = 0;
    const plans = await plansOf(async (explained) => {
      expired = await createReleases({ db: explained, releaseRelay: t.c.releaseRelay, pubsub: t.c.pubsub, log: t.c.log }).expireDue({ limit: t.c.config.expiryBatch });
    });
    assert.equal(expired, t.c.config.expiryBatch);
    assertPlans(plans, [
      [stmt('from "orders" where "status" = .* and "expires_at" <= .* for update skip locked'), 'orders', 'orders_status_expires'],
      [stmt('update "orders" set "status" = .* where "id" in'), 'orders', pk('orders')],
      [stmt('update user_quantities uq'), 'uq', pk('user_quantities')],
    ]);
  });

  it("when a buyer lists their orders, with and without a voucher, and reads one, then the buyer's index and the primary key serve them", async () => {
    const user = 1 + ((20 * 7919 + 3) % USERS);
    const plans = await plansOf(async (explained) => {
      const orders = createOrderRepository(explained);
      const listed = await orders.listByUser(BigInt(user), { limit: 50 });
      assert.ok(listed.length > 0);
      await orders.listByUser(BigInt(user), { voucherId: 3n, limit: 50 });
      await orders.findById(BigInt(listed[0]!.id));
    });
    assertPlans(plans, [
      [stmt('where "orders"\\."user_id" = \\S+ order by "orders"\\."created_at" desc'), 'orders', 'orders_user_created'],
      [stmt('where "orders"\\."user_id" = \\S+ and "orders"\\."voucher_id" = \\S+ order by'), 'orders', 'orders_idempotency'],
      [stmt('where "orders"\\."id" = \\S+$'), 'orders', pk('orders')],
    ]);
  });

  it('when a buyer pays one order and cancels another, then both go by primary key', async () => {
    // Pending orders of the last quarter-hour are not due: of the last voucher sold.
    const [toPay, toCancel] = await db
      .selectFrom('orders')
      .select(['id', 'user_id'])
      .where('status', '=', 'pending_payment')
      .where('voucher_id', '=', String(SOLD))
      .where('expires_at', '>', dialect.now)
      .orderBy('id', 'desc')
      .limit(2)
      .execute();
    assert.ok(toPay && toCancel);
    const plans = await plansOf(async (explained) => {
      const getOrder = getOrderUseCase({ orders: createOrderRepository(explained), inflight: t.c.inflight, directory: t.c.directory });
      const releases = createReleases({ db: explained, releaseRelay: t.c.releaseRelay, pubsub: t.c.pubsub, log: t.c.log });
      const pay = payOrderUseCase({ db: explained, getOrder, releases, pubsub: t.c.pubsub, eventOutbox: createEventOutbox({ amqp: true, webhooks: false }) });
      assert.equal((await pay(caller(toPay.user_id), BigInt(toPay.id))).status, 'paid');
      assert.equal((await cancelOrderUseCase({ getOrder, releases })(caller(toCancel.user_id), BigInt(toCancel.id))).status, 'cancelled');
    });
    assertPlans(plans, [
      [stmt('update "orders" set "status" = .*, "paid_at" = .* where "id" ='), 'orders', pk('orders')],
      [stmt('select "id", "voucher_id", "quantity", "amount", "currency", "trace_parent" from "orders" where "id" ='), 'orders', pk('orders')],
      [stmt('from "orders" where "id" = \\S+ and "user_id" = \\S+ and "status" = \\S+ for update'), 'orders', pk('orders')],
    ]);
  });

  it("when reconciliation looks for a voucher's overdue unpaid orders, then it reads them off (voucher_id, status, expires_at)", async () => {
    const voucherId = 50n;
    const plans = await plansOf(async (explained) => {
      const releases = createReleases({ db: explained, releaseRelay: t.c.releaseRelay, pubsub: t.c.pubsub, log: t.c.log });
      const { redis, keys, scripts, redisState, moves, directory, releaseRelay, log } = t.c;
      const reconciler = createReconciler({ db: explained, redis, keys, scripts, redisState, moves, directory, releaseRelay, releases, log, staleMoveMs: 10_000 });
      const report = await reconciler.reconcileVoucher(voucherId);
      assert.ok(report.drift.some((d) => d.kind === 'overdue_orders' && d.repaired), JSON.stringify(report));
    });
    assertPlans(plans, [
      [stmt('select count\\(\\*\\) as "n" from "orders" where "voucher_id" = \\S+ and "status" = \\S+ and "expires_at" <'), 'orders', 'orders_voucher_status_expires'],
      [stmt('from "orders" where "status" = .* and "expires_at" <= .* and "voucher_id" = .* for update skip locked'), 'orders', 'orders_voucher_status_expires'],
    ]);
  });

  it("when an operator polls a voucher's stats, then its counts are read by primary key, orders not at all", async () => {
    const plans = await plansOf((explained) => voucherStatsUseCase({ db: explained, redis: t.c.redis, keys: t.c.keys, directory: t.c.directory })(7n));
    assert.deepEqual(plans.flatMap((p) => p.accesses.map((a) => a.table)).filter((table) => table === 'orders'), []);
    assertPlans(plans, [
      [stmt('from "vouchers" as "v" left join "voucher_order_counts"'), 'v', pk('vouchers')],
      [stmt('from "vouchers" as "v" left join "voucher_order_counts"'), 'c', pk('voucher_order_counts')],
    ]);
  });

  it('when the event relay sends a round and the backlog gauge is read, then the outbox is read at the ends of its primary key and per order', async () => {
    const tap = await tapEvents('query_plans');
    const plans = await plansOf(async (explained) => {
      // A bound: the seed's INSERT … SELECT left ids unused past its rows (InnoDB reserves them in doubling blocks).
      assert.ok((await outboxBacklog(explained)).backlog >= EVENTS);
      const publisher = createAmqpPublisher({ url: AMQP_URL, exchange: tap.exchange, log: t.c.log, confirmTimeoutMs: 10_000 });
      let published: () => void;
      const round = new Promise<void>((resolve) => (published = resolve));
      const relay = EventRelay.start({ db: explained, publisher, log: t.c.log, pollMs: 60_000, batch: t.c.config.eventsBatch, onPublished: () => published() });
      await round;
      await relay.close();
    });
    assertPlans(plans, [
      [stmt('from "order_events" order by "event_id" limit \\S+ for update skip locked'), 'order_events', pk('order_events')],
      // Both databases prefer the primary key's range up to the last id claimed: as bounded.
      [stmt('where "order_id" in .* and "event_id" <='), 'order_events', ['order_events_order', pk('order_events')]],
      [stmt('delete from "order_events" where "event_id" in'), 'order_events', pk('order_events')],
      [stmt('from order_events e order by e.event_id limit 1'), 'e', pk('order_events')],
    ]);
  });
});
