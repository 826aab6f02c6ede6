// Each voucher's order counts by status are kept in the transactions that store and change orders,
// on the database of this pass (MariaDB, or PostgreSQL in scripts/test.sh's last pass): after every
// way an order is stored or changes status they equal a count of the rows, and stats answers them
// without reading the orders.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KyselyPlugin, Migrator, sql } from 'kysely';
import { voucherStatsUseCase } from '../../src/console/stats.js';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { migrations } from '../../src/infra/db/migrations/index.js';
import { ORDER_STATUSES, type StoredOrderStatus } from '../../src/infra/db/types.js';
import { parseEntry, type OrderEntry } from '../../src/infra/redis/records.js';
import { FailureReason } from '../../src/pipeline/settlement.js';
import { storeOrders } from '../../src/pipeline/store-orders.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';
import { waitFor } from '../../support/wait.js';

// One buyer sends several claims and payments in a row; the buckets are not what is tested here.
const t = await startTestApp(suiteScope(), 'order_counters', { RECONCILE_INTERVAL_MS: '0', BUCKET_USER_RATE: '0' });
await t.c.startWorkers();
const db = t.c.db;
const admin = async () => ({ authorization: `Bearer ${await t.admin()}` });

type Counts = Record<StoredOrderStatus, number>;
const zero = (): Counts => Object.fromEntries(ORDER_STATUSES.map((s) => [s, 0])) as Counts;

/** A count of the voucher's rows by status: what the counters must say. */
async function rowCounts(voucherId: string): Promise<Counts> {
  const rows = await db.selectFrom('orders').select(['status', sql<string>`count(*)`.as('n')]).where('voucher_id', '=', voucherId).groupBy('status').execute();
  const counts = zero();
  for (const r of rows) counts[r.status] = Number(r.n);
  return counts;
}

/** What GET /api/vouchers/:id/stats says of the voucher's orders. */
async function statsCounts(voucherId: string): Promise<Counts> {
  const res = await t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/stats`, headers: await admin() });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().orders;
}

/** Every voucher's counters equal its rows' count (a nonexistent voucher's failed orders included). */
async function assertAllCountersExact(): Promise<void> {
  const key = (r: { voucher_id: string; status: string; n: string | number }) => `${r.voucher_id}:${r.status}=${Number(r.n)}`;
  const rows = await db.selectFrom('orders').select(['voucher_id', 'status', sql<string>`count(*)`.as('n')]).groupBy(['voucher_id', 'status']).execute();
  const counters = await db
    .selectFrom('voucher_order_counts')
    .select(['voucher_id', 'status', sql<string>`sum(n)`.as('n')])
    .groupBy(['voucher_id', 'status'])
    .having(sql`sum(n)`, '!=', 0)
    .execute();
  assert.deepEqual(counters.map(key).sort(), rows.map(key).sort());
}

async function ownerOf(orderId: string): Promise<string> {
  return (await db.selectFrom('orders').select('user_id').where('id', '=', orderId).executeTakeFirstOrThrow()).user_id;
}

async function act(action: 'pay' | 'cancel', orderId: string): Promise<void> {
  const res = await orderAction(t, action, orderId, BigInt(await ownerOf(orderId)));
  assert.equal(res.statusCode, 200, res.body);
}

/**
 * Makes the orders due now and lets the payment timer expire them. The workers' own timer may take
 * them first (SKIP LOCKED: then this call skips them), so it waits until they are expired either way.
 */
async function expire(voucherId: string, orderIds: string[]): Promise<void> {
  await db.updateTable('orders').set({ expires_at: dialectOf(db).nowPlusSeconds(-1) }).where('id', 'in', orderIds).execute();
  await t.c.releases.expireDue({ limit: 100, voucherId: BigInt(voucherId) });
  await waitFor('the orders expired', async () => (await db.selectFrom('orders').select('id').where('id', 'in', orderIds).where('status', '=', 'expired').execute()).length === orderIds.length, 5_000);
}

describe('order counters', () => {
  it('when seckill orders are stored by the pipeline (one refused by the database), then paid, cancelled and expired, then the counters equal the rows and stats answers them', async () => {
    const v = await createVoucher(t, { stock: 20, perUserLimit: 1, paymentTimeoutSeconds: 600 });
    // The database already counts user 999's one unit; Redis does not: the pipeline fails that order.
    await db.insertInto('user_quantities').values({ voucher_id: v.id, user_id: '999', quantity: 1 }).execute();
    const admitted = await burst(t, v.id, [...range(1, 12), 999]);
    assert.equal(admitted.length, 13);
    await waitForDrain(t.c, v.id);
    const pending = (await db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).where('status', '=', 'pending_payment').orderBy('id').execute()).map((o) => o.id);
    for (const id of pending.slice(0, 3)) await act('pay', id);
    for (const id of pending.slice(3, 5)) await act('cancel', id);
    await expire(v.id, pending.slice(5, 7));

    const expected: Counts = { pending_payment: 5, paid: 3, cancelled: 2, expired: 2, failed: 1, refunded: 0 };
    assert.deepEqual(await rowCounts(v.id), expected);
    assert.deepEqual(await statsCounts(v.id), expected);
    await assertAllCountersExact();
  });

  for (const kind of ['limited', 'common'] as const) {
    it(`when ${kind} claims are stored in SQL, then paid, cancelled and expired, then the counters equal the rows and stats answers them`, async () => {
      const v = await createVoucher(t, { kind, stock: 10, perUserLimit: 2, paymentTimeoutSeconds: 600 });
      const orders: string[] = [];
      for (const user of range(1, 6)) {
        const res = await claim(t, v.id, user);
        assert.equal(res.statusCode, 201, res.body);
        orders.push(res.json().orderId);
      }
      await act('pay', orders[0]!);
      await act('pay', orders[1]!);
      await act('cancel', orders[2]!);
      await expire(v.id, [orders[3]!]);

      const expected: Counts = { pending_payment: 2, paid: 2, cancelled: 1, expired: 1, failed: 0, refunded: 0 };
      assert.deepEqual(await rowCounts(v.id), expected);
      assert.deepEqual(await statsCounts(v.id), expected);
      await assertAllCountersExact();
    });
  }

  it('when the pipeline fails orders whose voucher it holds no lock of (poison, a voucher that does not exist), then they are counted too', async () => {
    const v = await createVoucher(t, { stock: 5 });
    const missing = '77777777777';
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const entry = (orderId: string, voucherId: string) => parseEntry(shard, [`${Date.now()}-0`, ['d', `${orderId}|${voucherId}|501|1|${Date.now()}`]], 1) as OrderEntry;
    await storeOrders(db, [entry('8300000001', v.id)], { failAll: `${FailureReason.POISON}: delivered too often` });
    await storeOrders(db, [entry('8300000002', missing)]);
    assert.deepEqual(await rowCounts(v.id), { ...zero(), failed: 1 });
    assert.deepEqual(await statsCounts(v.id), { ...zero(), failed: 1 });
    assert.deepEqual(await rowCounts(missing), { ...zero(), failed: 1 });
    await assertAllCountersExact();
  });

  it('when 40 orders of one voucher are paid at once, then every payment succeeds and the counters stay exact', async () => {
    const v = await createVoucher(t, { stock: 40, paymentTimeoutSeconds: 600 });
    const admitted = await burst(t, v.id, range(1, 40));
    await waitForDrain(t.c, v.id);
    const owners = await Promise.all(admitted.map(ownerOf));
    const paid = await Promise.all(admitted.map(async (id, i) => (await orderAction(t, 'pay', id, BigInt(owners[i]!))).statusCode));
    assert.deepEqual(paid, admitted.map(() => 200));
    assert.deepEqual(await statsCounts(v.id), { ...zero(), paid: 40 });
    await assertAllCountersExact();
  });

  it('when a voucher has 50,000 orders, then stats reads no order to count them; migration 0007 backfills the counters of orders stored before it', async (ctx) => {
    const v = await createVoucher(t, { kind: 'common', stock: 10 });
    // Rows written directly, as before 0007: no counter knows them until the migration runs again.
    const numbers = dialectOf(db).name === 'mysql' ? 'select seq as i from seq_1_to_50000' : 'select generate_series(1, 50000) as i';
    await sql`insert into orders (id, voucher_id, user_id, quantity, status, created_at, expires_at)
      select 9000000000 + i, ${sql.raw(BigInt(v.id).toString())}, 1 + i % 5000, 1,
        case i % 5 when 0 then 'pending_payment' when 1 then 'expired' when 2 then 'cancelled' when 3 then 'failed' else 'paid' end,
        ${dialectOf(db).now}, null
      from (${sql.raw(numbers)}) n`.execute(db);
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    assert.ifError((await migrator.migrateTo('0006-idempotency-key-case')).error);
    assert.ifError((await migrator.migrateToLatest()).error);
    await assertAllCountersExact();

    const sent: string[] = [];
    const recorder: KyselyPlugin = {
      transformQuery: (args) => {
        sent.push(db.getExecutor().compileQuery(args.node, args.queryId).sql);
        return args.node;
      },
      transformResult: async ({ result }) => result,
    };
    const stats = voucherStatsUseCase({ db: db.withPlugin(recorder), redis: t.c.redis, keys: t.c.keys, directory: t.c.directory });
    const began = performance.now();
    const answer = await stats(BigInt(v.id));
    const statsMs = performance.now() - began;
    assert.deepEqual(answer.orders, { pending_payment: 10_000, paid: 10_000, cancelled: 10_000, expired: 10_000, failed: 10_000, refunded: 0 });
    assert.deepEqual(sent.filter((text) => /from\s+["`]?orders["`]?/i.test(text)), [], sent.join('\n'));
    const countBegan = performance.now();
    await rowCounts(v.id);
    ctx.diagnostic(`stats ${statsMs.toFixed(1)} ms; a count of the 50,000 rows by status ${(performance.now() - countBegan).toFixed(1)} ms`);
  });
});
