import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReconcileReport } from '../../src/consistency/reconciler.js';
import { claim, createVoucher, range, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { waitFor } from '../../support/wait.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

// Drift injected by hand into a live system, repaired by reconciliation within two runs; the
// audit is clean afterwards and no order failed for lack of stock (Redis never granted a unit the
// database did not have).

const t = await startTestApp(suiteScope(), 'reconcile', { RECONCILE_INTERVAL_MS: '0' });
await t.c.startWorkers();

/** Claims by fresh users, one after another, until stopped; returns the admitted order ids. */
function load(app: TestApp, voucherId: string, firstUser: number) {
  const admitted: string[] = [];
  let running = true;
  let user = firstUser;
  const done = (async () => {
    while (running) {
      const res = await claim(app, voucherId, user++);
      if (res.statusCode === 202) admitted.push(res.json().orderId);
      // A pace, not a wait for anything: a steady trickle of claims runs beside the drift and repairs.
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    admitted,
    async stop() {
      running = false;
      await done;
      return admitted;
    },
  };
}

const reconcile = async (voucherId: string): Promise<ReconcileReport> => {
  const res = await t.app.inject({ method: 'POST', url: `/api/vouchers/${voucherId}/reconcile`, headers: { authorization: `Bearer ${await t.admin()}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};

/** Runs reconciliation until it repairs `kind` (at most two runs); returns the drift found. */
async function repairedWithinTwoRuns(voucherId: string, kind: string) {
  for (let run = 1; run <= 2; run++) {
    const report = await reconcile(voucherId);
    const drift = report.drift.filter((d) => d.kind === kind);
    if (drift.length && drift.every((d) => d.repaired)) return drift;
  }
  assert.fail(`${kind} was not repaired within two runs`);
}

async function endClean(voucherId: string, admitted: string[]) {
  await waitForDrain(t.c, voucherId);
  await waitFor('releases relayed', async () => (await t.c.db.selectFrom('release_outbox').select('order_id').execute()).length === 0);
  const truth = await assertInvariants(t.c, voucherId, admitted);
  assert.deepEqual(truth.orders.filter((o) => o.status === 'failed'), [], 'no order failed: Redis never granted a unit the database lacked');
  assert.equal(truth.redisStock, truth.dbStock);
  const after = await reconcile(voucherId);
  assert.deepEqual(after.drift, [], 'a further run finds nothing');
  return truth;
}

describe('reconciliation under load', () => {
  it('when nothing is wrong, then it repairs nothing and reports no drift while claims are being admitted and stored', async () => {
    const v = await createVoucher(t, { stock: 5_000 });
    const traffic = load(t, v.id, 10_000);
    await waitFor('some admissions', () => traffic.admitted.length > 20);
    const reports = [];
    for (let i = 0; i < 5; i++) reports.push(await reconcile(v.id));
    const admitted = await traffic.stop();
    assert.deepEqual(reports.flatMap((r) => r.drift), []);
    assert.ok(reports.some((r) => r.verified), 'at least one comparison was made');
    await endClean(v.id, admitted);
  });

  for (const [name, delta] of [['up', 7], ['down', -7]] as const) {
    it(`when Redis stock is moved ${name}, then it is set back to what the database implies`, async () => {
      const v = await createVoucher(t, { stock: 5_000 });
      const traffic = load(t, v.id, 20_000 + (delta > 0 ? 0 : 5_000));
      await waitFor('some admissions', () => traffic.admitted.length > 10);
      await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'stock', delta);
      const [drift] = await repairedWithinTwoRuns(v.id, 'stock');
      assert.match(drift!.detail, /Redis stock \d+, database implies \d+/);
      await endClean(v.id, await traffic.stop());
    });
  }

  it('when a buyer count disappears, then it is restored and the limit holds again', async () => {
    const v = await createVoucher(t, { stock: 5_000 });
    const traffic = load(t, v.id, 30_000);
    await waitFor('some admissions', () => traffic.admitted.length > 10);
    await t.c.redis.hdel(t.c.keys.buyers(BigInt(v.id)), '30001');
    await repairedWithinTwoRuns(v.id, 'buyer');
    const admitted = await traffic.stop();
    assert.equal((await claim(t, v.id, 30_001)).json().code, 'LIMIT_EXCEEDED');
    await endClean(v.id, admitted);
  });

  it('when the voucher state is flushed from Redis, then it is rebuilt from the database', async () => {
    const busy = await createVoucher(t, { stock: 5_000 });
    const traffic = load(t, busy.id, 40_000); // load elsewhere: a claim on the flushed voucher would rebuild it first
    const v = await createVoucher(t, { stock: 50 });
    const sold = await Promise.all(range(1, 10).map((u) => claim(t, v.id, u)));
    await waitForDrain(t.c, v.id);
    await deleteKeys(t.c.redis, `${t.c.keys.prefix}:*:v:${v.id}*`);
    await repairedWithinTwoRuns(v.id, 'state_missing');
    await endClean(v.id, sold.map((r) => r.json().orderId));
    await endClean(busy.id, await traffic.stop());
  });

  it('when a stored order\'s in-flight record comes back (an orphan), then it is cleared', async () => {
    const v = await createVoucher(t, { stock: 100 });
    const sold = await Promise.all(range(1, 5).map((u) => claim(t, v.id, u)));
    await waitForDrain(t.c, v.id);
    const orderId = sold[0]!.json().orderId;
    const shard = t.c.keys.shardOf(BigInt(v.id));
    // A record as admit writes it, for an order the database stored long ago (settlement lost).
    await t.c.redis.hset(t.c.keys.inflight(shard), orderId, `${v.id}|1|1|${Date.now() - 60_000}|0-1`);
    await t.c.redis.hincrby(t.c.keys.voucher(BigInt(v.id)), 'inflight', 1);
    await repairedWithinTwoRuns(v.id, 'unsettled_order');
    await endClean(v.id, sold.map((r) => r.json().orderId));
  });
});

describe('reconciliation of lost stream data', () => {
  it('when an admission\'s stream entry is lost, or an entry\'s in-flight record, then the order is still stored', async (ctx) => {
    const idle = await startTestApp(ctx, 'rec-lost', { RECONCILE_INTERVAL_MS: '0' }); // no pipeline yet: entries wait
    const v = await createVoucher(idle, { stock: 5_000 });
    const admitted = (await Promise.all(range(1, 20).map((u) => claim(idle, v.id, u)))).map((r) => r.json().orderId as string);
    const traffic = load(idle, v.id, 1_000); // claims keep coming while the drift is found and repaired
    const shard = idle.c.keys.shardOf(BigInt(v.id));
    const [lost, unrecorded] = await Promise.all(admitted.slice(0, 2).map((id) => idle.c.inflight.find(BigInt(id))));
    await idle.c.redis.xdel(idle.c.keys.orders(shard), lost!.streamId);
    await idle.c.redis.hdel(idle.c.keys.inflight(shard), unrecorded!.orderId);

    const report = async () => {
      const kinds = new Set<string>();
      for (let run = 0; run < 2; run++) for (const d of (await idle.c.reconciler.reconcileVoucher(BigInt(v.id))).drift) if (d.repaired) kinds.add(d.kind);
      return kinds;
    };
    const kinds = await report();
    assert.ok(kinds.has('lost_entry'), 'the lost entry is requeued');
    assert.ok(kinds.has('lost_inflight_record'), 'the missing record is restored');
    assert.ok(await idle.c.inflight.find(BigInt(unrecorded!.orderId)));
    admitted.push(...(await traffic.stop()));

    await idle.c.startWorkers();
    await waitForDrain(idle.c, v.id);
    const truth = await assertInvariants(idle.c, v.id, admitted);
    assert.equal(truth.orders.length, admitted.length, 'every 202 became exactly one stored order');
    assert.ok(truth.orders.every((o) => o.status === 'pending_payment'));
  });
});

describe('scheduled reconciliation', () => {
  it('runs by itself every RECONCILE_INTERVAL_MS and repairs drift', async (ctx) => {
    const scheduled = await startTestApp(ctx, 'rec-sched', { RECONCILE_INTERVAL_MS: '300' });
    await scheduled.c.startWorkers();
    const v = await createVoucher(scheduled, { stock: 30 });
    await scheduled.c.redis.hincrby(scheduled.c.keys.voucher(BigInt(v.id)), 'stock', 5);
    await waitFor('the scheduled run to repair the stock', async () => (await scheduled.c.redis.hget(scheduled.c.keys.voucher(BigInt(v.id)), 'stock')) === '30');
    const metrics = await scheduled.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(metrics.body, /seckill_reconcile_repairs_total\{kind="stock"\} 1/);
  });
});
