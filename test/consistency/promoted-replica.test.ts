import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inflightRecord } from '../../src/infra/redis/records.js';
import { ensureConsumerGroups } from '../../src/pipeline/maintenance.js';
import { storeOrders } from '../../src/pipeline/store-orders.js';
import { claim, createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

// What a promoted replica holds after a failover: the admissions it received, but not the
// settlements the old master made once their orders were stored. Reconciliation must count such an
// order once (the database holds it) and clear what is left of it in Redis.

const t = await startTestApp(suiteScope(), 'promoted', { RECONCILE_INTERVAL_MS: '0' }); // no workers until the end: entries wait
await ensureConsumerGroups(t.c.redis, t.c.keys);

describe('reconciliation of a promoted replica', () => {
  it('when an order stored by the old master still has its in-flight record and stream entry, then it is counted once and its record settled', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const res = await claim(t, v.id, 7);
    assert.equal(res.statusCode, 202, res.body);
    const orderId: string = res.json().orderId;
    // The old master's pipeline stored it; its settlement never reached the replica.
    const order = (await t.c.inflight.find(BigInt(orderId)))!;
    const stored = await storeOrders(t.c.db, [{ ...order, voucherId: BigInt(order.voucherId), deliveries: 1 }]);
    assert.equal(stored.get(orderId)?.kind, 'stored');
    // Admitted a minute ago (past the settlement grace): the record is stale, not an order on its way.
    await t.c.redis.hset(t.c.keys.inflight(order.shard), orderId, inflightRecord({ ...order, createdAt: new Date(Date.now() - 60_000) }));

    const reports = [await t.c.reconciler.reconcileVoucher(BigInt(v.id)), await t.c.reconciler.reconcileVoucher(BigInt(v.id))];
    const drift = reports.flatMap((r) => r.drift);
    assert.deepEqual(drift.filter((d) => d.kind !== 'unsettled_order'), [], 'no buyer, stock or counter drift: the order is counted once');
    assert.ok(drift.some((d) => d.kind === 'unsettled_order' && d.repaired), 'the stale record is settled');
    const view = await redisView(t, v.id);
    assert.deepEqual(view.inflight, []);
    assert.deepEqual(view.buyers, { '7': 1 });
    assert.equal(view.stock, 9);
    assert.equal((await claim(t, v.id, 7)).json().code, 'LIMIT_EXCEEDED');

    // The entry is still in the stream: the pipeline finds the order stored and stores nothing twice.
    await t.c.startWorkers();
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [orderId]);
    assert.deepEqual(truth.orders.map((o) => [o.id, o.status]), [[orderId, 'pending_payment']]);
  });

  it('when the new master lacks the record of a claim the old one took and stored, then a retry with the same Idempotency-Key gets that order once the voucher is verified', async () => {
    await t.c.startWorkers();
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const first = await claim(t, v.id, 8, { idempotencyKey: 'retry-8' });
    assert.equal(first.statusCode, 202, first.body);
    await waitForDrain(t.c, v.id);
    const row = await t.c.db.selectFrom('orders').select('idempotency_key').where('id', '=', first.json().orderId).executeTakeFirstOrThrow();
    assert.equal(row.idempotency_key, 'retry-8', 'the order is stored with its key');
    // The promoted replica never had the admission's record, and the state is not verified on it yet.
    await t.c.redis.del(t.c.keys.idempotency(BigInt(v.id)));
    await t.c.redis.hset(t.c.keys.voucher(BigInt(v.id)), 'verifiedOn', 'another-master');
    const retry = await claim(t, v.id, 8, { idempotencyKey: 'retry-8' });
    assert.equal(retry.statusCode, 202, retry.body);
    assert.equal(retry.json().orderId, first.json().orderId);
    await assertInvariants(t.c, v.id, [first.json().orderId]);
  });

  it('when a key is admitted again after Redis lost its record, then the second order is stored without the key, never refused for it', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 2 });
    const first = await claim(t, v.id, 9, { idempotencyKey: 'twice' });
    await waitForDrain(t.c, v.id);
    await t.c.redis.del(t.c.keys.idempotency(BigInt(v.id)));
    const second = await claim(t, v.id, 9, { idempotencyKey: 'twice' });
    assert.equal(second.statusCode, 202, second.body);
    assert.notEqual(second.json().orderId, first.json().orderId);
    await waitForDrain(t.c, v.id);
    const rows = await t.c.db.selectFrom('orders').select(['id', 'status', 'idempotency_key']).where('voucher_id', '=', v.id).orderBy('id').execute();
    assert.deepEqual(rows.map((r) => [r.status, r.idempotency_key]), [['pending_payment', 'twice'], ['pending_payment', null]]);
    await assertInvariants(t.c, v.id, [first.json().orderId, second.json().orderId]);
  });
});
