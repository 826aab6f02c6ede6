// ADMIT_DURABILITY=memory: an admission that Redis loses before the pipeline stores it. The buyer
// was told `processing`; the order read must then say what happened instead of `processing` for
// ever, and the buyer may claim again and be stored once.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';
import { startPrivateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';

describe('an admission lost with Redis', async () => {
  const redis = await startPrivateRedis();
  const t = await startTestApp(suiteScope(), 'lostadmission', { REDIS_URL: redis.url, REDIS_CHECK_INTERVAL_MS: '200' });
  after(() => redis.stop()); // after the app: after hooks run in order

  it('when Redis forgets an admitted order before it is stored, then its read says it was lost, and the buyer claims again and is stored once', { timeout: 60_000 }, async () => {
    const v = await createVoucher(t, { stock: 5, perUserLimit: 1 });
    const first = await claim(t, v.id, 7);
    assert.equal(first.statusCode, 202, first.body);
    const token = await t.token(7);
    const lostId = first.json().orderId as string;
    const before = await t.app.inject({ method: 'GET', url: `/api/orders/${lostId}`, headers: { authorization: `Bearer ${token}` } });
    assert.equal(before.json().status, 'processing');

    // No worker ran yet: the admission lives only in Redis, which now forgets everything.
    const direct = new Redis(redis.url);
    await direct.flushall();
    direct.disconnect();
    await waitFor('the data loss to be noticed', async () => ((await t.c.metrics.redisDataLosses.get()).values[0]?.value ?? 0) >= 1);

    const gone = await t.app.inject({ method: 'GET', url: `/api/orders/${lostId}`, headers: { authorization: `Bearer ${token}` } });
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'ORDER_NOT_FOUND');
    assert.match(gone.json().message, /lost it before storing it .*claim again/);

    const again = await claim(t, v.id, 7);
    assert.equal(again.statusCode, 202, again.body);
    assert.notEqual(again.json().orderId, lostId);
    await t.c.startWorkers();
    await waitForDrain(t.c, v.id);
    const orders = await t.c.db.selectFrom('orders').select(['id', 'user_id', 'status']).where('voucher_id', '=', v.id).execute();
    assert.deepEqual(orders.map((o) => [String(o.id), String(o.user_id), o.status]), [[again.json().orderId, '7', 'pending_payment']]);
    const row = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
    assert.equal(Number(row.stock), 4);
  });
});
