import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONSUMER_GROUP } from '../../src/pipeline/maintenance.js';
import { inflightOfEntry, inflightRecord, isMalformed, parseEntry, parseInflight, type OrderEntry } from '../../src/infra/redis/records.js';
import { sql } from 'kysely';
import { dialectOf, MYSQL, POSTGRES } from '../../src/infra/db/dialect.js';
import { text } from '../../src/infra/db/literals.js';
import { insertOrdersSql, type OrderRow } from '../../src/pipeline/bulk-sql.js';
import { addHeldSql, lockHeldSql } from '../../src/vouchers/held-units.js';
import { FailureReason } from '../../src/pipeline/settlement.js';
import { storeOrders } from '../../src/pipeline/store-orders.js';
import { burst, claim, createVoucher, range, startSecondContainer, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, readTruth, waitForDrain } from '../support/invariants.js';
import { waitFor } from '../../support/wait.js';

const t = await startTestApp(suiteScope(), 'pipeline', { CLAIM_IDLE_MS: '1000', MAX_DELIVERIES: '2', PIPELINE_BATCH: '200' });

/** A dead letter is "entry <stream id> reason <text>" followed by the fields of the entry. */
function deadLetterOrderId(shard: number, [, fields]: [string, string[]]) {
  const e = parseEntry(shard, [fields[1]!, fields.slice(4)], 1);
  return isMalformed(e) ? null : e.orderId;
}

describe('order pipeline', () => {
  it('when a burst of admissions arrives, then exactly the admitted orders are stored, pending payment', async () => {
    const v = await createVoucher(t, { stock: 300, perUserLimit: 2 });
    const admitted = [...(await burst(t, v.id, range(1, 400))), ...(await burst(t, v.id, range(1, 400)))];
    assert.equal(admitted.length, 300);
    await t.c.startPipeline();
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.orders.length, 300);
    assert.ok(truth.orders.every((o) => o.status === 'pending_payment'));
    assert.equal(truth.dbStock, 0);
    const order = await t.app.inject({ method: 'GET', url: `/api/orders/${admitted[0]}`, headers: { authorization: `Bearer ${await t.admin()}` } });
    assert.equal(order.json().status, 'pending_payment');
    assert.ok(Date.parse(order.json().expiresAt) > Date.now() + 800_000, 'payment window of 900 s starts at storage');
  });

  it('when an entry is delivered again after it was stored, then it is acknowledged and stored only once', async () => {
    const v = await createVoucher(t, { stock: 10 });
    const admitted = await burst(t, v.id, range(100, 5));
    // The entries as admitted, read before the pipeline acknowledges them and trimming may drop them.
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const raw = await t.c.redis.xrange(t.c.keys.orders(shard), '-', '+');
    const copies = raw.filter((r) => admitted.includes((parseEntry(shard, r, 1) as OrderEntry).orderId));
    assert.equal(copies.length, 5);
    await waitForDrain(t.c, v.id);
    // Re-deliver: the same entries appended again, as a consumer that crashed before XACK would see them.
    for (const [, fields] of copies) await t.c.redis.xadd(t.c.keys.orders(shard), '*', ...fields);
    // Wait until the group has read every copy (lag 0) and acknowledged it (nothing pending).
    const settled = async () => {
      const groups = (await t.c.redis.xinfo('GROUPS', t.c.keys.orders(shard))) as unknown[][];
      const group = groups.find((g) => g[1] === CONSUMER_GROUP)!;
      const field = (name: string) => Number(group[group.indexOf(name) + 1]);
      return field('lag') === 0 && field('pending') === 0;
    };
    await waitFor('the copies read and acknowledged', settled, 10_000, 50);
    assert.ok(await settled(), 'copies read and acknowledged');
    await assertInvariants(t.c, v.id, admitted);
    assert.equal((await readTruth(t.c, v.id)).orders.length, 5);
  });

  it('when the same orders are stored and settled twice, then the second time changes nothing', async (ctx) => {
    const v = await createVoucher(t, { stock: 4 });
    const pipelineOff = await startSecondContainer(ctx, t);
    const admitted = await burst(t, v.id, range(200, 3));
    await waitForDrain(t.c, v.id);
    // The entries as a redelivery would bring them again (the stream is trimmed once they are settled).
    const stored = (await readTruth(t.c, v.id)).orders;
    assert.equal(stored.length, 3);
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const entries: OrderEntry[] = stored.map((o, i) => ({
      shard, streamId: `1-${i}`, orderId: o.id, voucherId: BigInt(v.id), userId: o.user_id, quantity: o.quantity, createdAt: new Date(), promoted: false, deliveries: 2,
    }));
    const again = await storeOrders(pipelineOff.db, entries);
    assert.equal(again.size, 3);
    assert.ok([...again.values()].every((s) => s.kind === 'stored'));
    await assertInvariants(t.c, v.id, admitted);
  });

  it('when a batch is stored, then its rows hold exactly the entries (UTC times, database-time payment window, reasons verbatim)', async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 2, paymentTimeoutSeconds: 120 });
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const entry = (orderId: string, userId: string, quantity: number, createdMs: number) =>
      parseEntry(shard, [`${createdMs}-0`, ['d', `${orderId}|${v.id}|${userId}|${quantity}|${createdMs}`]], 1) as OrderEntry;
    const created = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const before = Date.now();
    await storeOrders(t.c.db, [entry('8100000001', '601', 2, created), entry('8100000002', '602', 1, created + 1)]);
    const reason = `${FailureReason.POISON}: it's a "quoted" \\ reason; -- not SQL`;
    await storeOrders(t.c.db, [entry('8100000003', '603', 1, created + 2)], { failAll: reason });
    const rows = await t.c.db.selectFrom('orders').selectAll().where('voucher_id', '=', v.id).orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => [r.id, r.user_id, r.quantity, r.status, r.failure_reason]),
      [
        ['8100000001', '601', 2, 'pending_payment', null],
        ['8100000002', '602', 1, 'pending_payment', null],
        ['8100000003', '603', 1, 'failed', reason],
      ],
    );
    assert.equal(rows[0]!.created_at.getTime(), created);
    assert.equal(rows[1]!.created_at.getTime(), created + 1);
    assert.equal(rows[0]!.expires_at!.getTime(), rows[1]!.expires_at!.getTime(), 'one clock reading per batch');
    assert.ok(Math.abs(rows[0]!.expires_at!.getTime() - (before + 120_000)) < 5_000, 'window counted from storage');
    assert.equal(rows[2]!.expires_at, null);
    const held = await t.c.db.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', v.id).orderBy('user_id').execute();
    assert.deepEqual(held, [{ user_id: '601', quantity: 2 }, { user_id: '602', quantity: 1 }]);
    const { stock } = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
    assert.equal(stock, 2);
  });

  it('the hand-built bulk statements refuse anything but integers and storable dates', () => {
    const row: OrderRow = {
      id: '1',
      voucherId: 2n,
      userId: '3',
      quantity: 1,
      status: 'pending_payment',
      createdAt: new Date(0),
      amount: 0,
      currency: 'USD',
      paymentTimeoutSeconds: 60,
      failureReason: null,
      idempotencyKey: 'k-1',
      traceParent: null,
    };
    for (const d of [MYSQL, POSTGRES]) {
      assert.match(insertOrdersSql(d, [row], Date.UTC(2026, 0, 1)), /values \(1,2,3,1,'pending_payment','1970-01-01 00:00:00.000','2026-01-01 00:01:00.000',NULL,0,'USD','k-1'\)$/);
      assert.match(insertOrdersSql(d, [{ ...row, idempotencyKey: null }], 0), /,0,'USD',NULL\)$/);
      // A traced order adds the column for the whole statement; an untraced batch's is unchanged.
      const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      assert.match(insertOrdersSql(d, [{ ...row, traceParent: tp }, row], 0), new RegExp(`idempotency_key, trace_parent\\) values .*,'k-1','${tp}'\\),.*,'k-1',NULL\\)$`));
      assert.doesNotMatch(insertOrdersSql(d, [row], 0), /trace_parent/);
      assert.throws(() => insertOrdersSql(d, [{ ...row, id: '1 or 1=1' }], 0), TypeError);
      assert.throws(() => insertOrdersSql(d, [{ ...row, userId: '-3' }], 0), TypeError);
      assert.throws(() => insertOrdersSql(d, [{ ...row, quantity: 1.5 }], 0), TypeError);
      assert.throws(() => insertOrdersSql(d, [{ ...row, createdAt: new Date(1e15) }], 0), RangeError);
      assert.throws(() => addHeldSql(d, [{ voucherId: 2n, userId: "3'", quantity: 1 }]), TypeError);
    }
    assert.throws(() => lockHeldSql([[2n, ['3', '4) or (1=1']]]), TypeError);
  });

  it("the bulk statements' text literals read back as written on this database", async () => {
    const nasty = "it's a \\ back\\'slash'); drop table orders; -- \n\t\"end\"";
    const { rows } = await sql.raw<{ v: string }>(`select ${text(dialectOf(t.c.db), nasty)} as v`).execute(t.c.db);
    assert.equal(rows[0]!.v, nasty);
  });

  it('when a batch spans several vouchers, one of them unknown, then each voucher is decided on its own', async () => {
    const a = await createVoucher(t, { stock: 2, perUserLimit: 1 });
    const b = await createVoucher(t, { stock: 5, perUserLimit: 2 });
    const missing = '999999999';
    let seq = 0;
    const entry = (orderId: string, voucherId: string, userId: string, quantity = 1) => {
      const shard = t.c.keys.shardOf(BigInt(voucherId));
      return parseEntry(shard, [`${Date.now()}-${seq++}`, ['d', `${orderId}|${voucherId}|${userId}|${quantity}|${Date.now()}`]], 1) as OrderEntry;
    };
    const decided = await storeOrders(t.c.db, [
      entry('8200000001', b.id, '701', 2),
      entry('8200000002', a.id, '701'),
      entry('8200000003', missing, '701'),
      entry('8200000004', a.id, '702'),
      entry('8200000005', a.id, '703'),
      entry('8200000006', b.id, '701'),
    ]);
    const outcome = (id: string) => {
      const s = decided.get(id)!;
      return s.kind === 'stored' ? 'stored' : s.reason.split(':')[0];
    };
    assert.deepEqual(
      ['8200000001', '8200000002', '8200000003', '8200000004', '8200000005', '8200000006'].map(outcome),
      ['stored', 'stored', 'VOUCHER_NOT_FOUND', 'stored', 'DB_SOLD_OUT', 'DB_LIMIT_EXCEEDED'],
    );
    const stock = async (id: string) => (await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock;
    assert.deepEqual([await stock(a.id), await stock(b.id)], [0, 3]);
    const held = await t.c.db.selectFrom('user_quantities').select(['voucher_id', 'user_id', 'quantity']).where('user_id', 'in', ['701', '702', '703']).orderBy('voucher_id').orderBy('user_id').execute();
    assert.deepEqual(held, [
      { voucher_id: a.id, user_id: '701', quantity: 1 },
      { voucher_id: a.id, user_id: '702', quantity: 1 },
      { voucher_id: b.id, user_id: '701', quantity: 2 },
    ]);
    const rows = await t.c.db.selectFrom('orders').select(['id', 'status']).where('id', 'in', [...decided.keys()]).execute();
    assert.equal(rows.length, 6, 'every order stored, the refused ones as failed');
  });

  it('when two workers race on one shard, then every order is stored once', async (ctx) => {
    const second = await startSecondContainer(ctx, t, { CONSUMER_NAME: 'racer-b' });
    await second.startPipeline();
    const v = await createVoucher(t, { stock: 1000 });
    const admitted = await burst(t, v.id, range(10_000, 1000));
    assert.equal(admitted.length, 1000);
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, admitted);
    assert.equal(truth.orders.length, 1000);
  });

  it('when the database disagrees with Redis, then only the invalid orders fail, with a reason, compensated once', async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 1 });
    // The database already knows user 300 holds the one unit allowed; Redis does not.
    await t.c.db.insertInto('user_quantities').values({ voucher_id: v.id, user_id: '300', quantity: 1 }).execute();
    await t.c.db.updateTable('vouchers').set({ stock: 4 }).where('id', '=', v.id).execute();
    await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'stock', -1);
    await t.c.db
      .insertInto('orders')
      .values({ id: '9000000001', voucher_id: v.id, user_id: '300', quantity: 1, status: 'paid', created_at: new Date(), expires_at: null, paid_at: new Date(), failure_reason: null })
      .execute();
    const admitted = await burst(t, v.id, [300, 301, 302]);
    assert.equal(admitted.length, 3);
    await waitForDrain(t.c, v.id);
    // Compensation undid exactly what the admission added; the drift injected above (Redis never
    // knew of user 300's unit) is reconciliation's to repair, so repair it by hand here.
    assert.equal(await t.c.redis.hget(t.c.keys.buyers(BigInt(v.id)), '300'), null);
    await t.c.redis.hset(t.c.keys.buyers(BigInt(v.id)), '300', 1);
    const truth = await assertInvariants(t.c, v.id, admitted);
    const failed = truth.orders.filter((o) => o.status === 'failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.user_id, '300');
    assert.match(failed[0]!.failure_reason!, /^DB_LIMIT_EXCEEDED/);
    assert.equal(truth.redisStock, 2, 'the unit of the failed order came back: 5 - 1 (paid) - 2 (stored)');
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const dead = await t.c.redis.xrange(t.c.keys.deadLetters(shard), '-', '+');
    assert.equal(dead.filter((d) => deadLetterOrderId(shard, d) === failed[0]!.id).length, 1, 'one dead letter');
    // Redis thought there was more stock than the database: the surplus is not handed back.
    await t.c.db.updateTable('vouchers').set({ stock: 0 }).where('id', '=', v.id).execute();
    await t.c.db.updateTable('user_quantities').set({ quantity: 0 }).where('voucher_id', '=', v.id).execute();
    await t.c.db.updateTable('orders').set({ status: 'cancelled' }).where('voucher_id', '=', v.id).where('status', '!=', 'failed').execute();
    const late = await claim(t, v.id, 303);
    assert.equal(late.statusCode, 202);
    await waitForDrain(t.c, v.id);
    const after = await readTruth(t.c, v.id);
    const lateOrder = after.orders.find((o) => o.id === late.json().orderId)!;
    assert.equal(lateOrder.status, 'failed');
    assert.match(lateOrder.failure_reason!, /^DB_SOLD_OUT/);
    assert.equal(after.redisStock, 1, 'stock not restored for a unit the database never had');
    assert.equal(after.redisBuyers.get('303'), undefined, 'buyer count restored');
  });

  it('when entries are malformed or can never be stored, then they end as dead letters and do not block the entries behind them', async () => {
    const v = await createVoucher(t, { stock: 10 });
    const shard = t.c.keys.shardOf(BigInt(v.id));
    const stream = t.c.keys.orders(shard);
    await t.c.redis.xadd(stream, '*', 'o', 'garbage');
    await t.c.redis.xadd(stream, '*', 'd', `8000000009|${v.id}|409`);
    // Well-formed but unstorable: a creation time beyond what DATETIME can hold.
    await t.c.redis.hset(t.c.keys.inflight(shard), '8000000001', `${v.id}|401|1|1000000000000000|0-1`);
    await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'stock', -1);
    await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'inflight', 1);
    await t.c.redis.hset(t.c.keys.buyers(BigInt(v.id)), '401', 1);
    await t.c.redis.xadd(stream, '*', 'd', `8000000001|${v.id}|401|1|1000000000000000`);
    const admitted = await burst(t, v.id, range(410, 5));
    assert.equal(admitted.length, 5);
    await waitForDrain(t.c, v.id, 20_000);
    const truth = await assertInvariants(t.c, v.id, [...admitted, '8000000001']);
    const poison = truth.orders.find((o) => o.id === '8000000001')!;
    assert.equal(poison.status, 'failed');
    assert.match(poison.failure_reason!, /^POISON/);
    assert.equal(truth.orders.filter((o) => o.status === 'pending_payment').length, 5);
    const dead = await t.c.redis.xrange(t.c.keys.deadLetters(shard), '-', '+');
    const reasons = dead.map(([, f]) => f[f.indexOf('reason') + 1]!);
    assert.equal(reasons.filter((r) => r.startsWith('malformed entry')).length, 2);
    assert.ok(reasons.some((r) => r.startsWith('POISON')));
    assert.ok(dead.some((d) => deadLetterOrderId(shard, d) === '8000000001'), 'the poison entry is copied whole');
    const pending = (await t.c.redis.xpending(stream, CONSUMER_GROUP)) as [number];
    assert.equal(pending[0], 0);
  });
});

describe('stream entries', () => {
  const shard = 3;
  const expected = { shard, streamId: '5-1', orderId: '81', voucherId: 7n, userId: '9', quantity: 2, createdAt: new Date(1_700_000_000_123), promoted: false, deliveries: 1 };

  it('reads an entry as the admit script writes it', () => {
    assert.deepEqual(parseEntry(shard, ['5-1', ['d', '81|7|9|2|1700000000123']], 1), expected);
  });

  it('reads the mark of a waitlist promotion, and its in-flight record keeps it for an entry rebuilt from it', () => {
    const e = parseEntry(shard, ['5-1', ['d', '81|7|9|2|1700000000123|p']], 1) as OrderEntry;
    assert.deepEqual(e, { ...expected, promoted: true });
    const record = inflightRecord(inflightOfEntry(e));
    assert.equal(record, '7|9|2|1700000000123|5-1|p');
    assert.deepEqual(parseInflight('81', record, shard), inflightOfEntry(e));
    assert.equal(parseInflight('81', '7|9|2|1700000000123|5-1', shard).promoted, false);
  });

  it('takes ids up to the largest signed 64-bit value, kept exact', () => {
    const e = parseEntry(shard, ['5-1', ['d', '9223372036854775807|9223372036854775807|9223372036854775807|1|0']], 1) as OrderEntry;
    assert.deepEqual([e.orderId, e.voucherId, e.userId], ['9223372036854775807', 9223372036854775807n, '9223372036854775807']);
  });

  it('when an entry is malformed, then it is reported with its fields', () => {
    const bad: string[][] = [
      ['d', '81|7|9|2'],
      ['d', '81|7|9|2|1700000000123|extra'],
      ['d', '81|7|9|2|1700000000123|q'],
      ['d', '81|7|9|2|1700000000123|p|p'],
      ['d', '81|7|9|2|p'],
      ['d', '81|7|9|2|1700000000123', 'p', '1'],
      ['d', '81|7|9|0|1700000000123'],
      ['d', 'x|7|9|2|1700000000123'],
      ['d', '81|7|9|2|soon'],
      ['d', '9223372036854775808|7|9|2|1700000000123'],
      ['d', '81|7|09|2|1700000000123'],
      ['d', '0|7|9|2|1700000000123'],
      ['d', '81|7|9|2|'],
      ['d', '81|7|9|0x10|1700000000123'],
      ['d', '81|7|9|2|1.7e12'],
      ['o', '81', 'v', '7', 'u', '9', 'q', '2', 't', '1700000000123'],
      ['o', 'garbage'],
      [],
    ];
    for (const fields of bad) {
      const e = parseEntry(shard, ['5-1', fields], 1);
      assert.ok(isMalformed(e), JSON.stringify(fields));
      assert.match(e.reason, /^malformed entry: /);
    }
  });
});
