// Redis dies mid-sale and comes back: empty (no persistence, as this machine kind runs it, or a
// flush), or from its append-only file. The service must carry on by itself, and every admission
// answered 202 after Redis is back (and, with ADMIT_DURABILITY=fsync, every one) must be stored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createVoucher, type Scope, startTestApp } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { type PrivateRedisOptions, startPrivateRedis } from '../../support/private-redis.js';
import { assertContractAnswers, injectClaims, startSale } from '../support/sale.js';
import { waitFor } from '../../support/wait.js';

const STOCK = 3_000;
const BUYERS = 4_000;

/**
 * A sale on a Redis of its own that is killed (SIGKILL) once a third of the units are admitted
 * and started again at once; resolves when every buyer has their answer.
 */
async function saleWithRedisCrash(scope: Scope, label: string, persistence: PrivateRedisOptions, env: Record<string, string>) {
  const redis = await startPrivateRedis(persistence);
  const t = await startTestApp(scope, label, { REDIS_URL: redis.url, REDIS_CHECK_INTERVAL_MS: '200', ...env });
  scope.after(() => redis.stop()); // after the app: after hooks run in order
  await t.c.startWorkers();
  const v = await createVoucher(t, { stock: STOCK });
  const sale = startSale({ send: injectClaims(t, v.id), firstUser: 1, buyers: BUYERS, concurrency: 200, retries: 30 });
  await waitFor('a third of the units admitted', () => sale.admitted().length >= STOCK / 3, 60_000);
  await redis.kill();
  await redis.restart();
  const back = performance.now();
  await sale.done;
  return { t, v, sale, back };
}

describe('Redis restarted mid-sale', () => {
  it('when Redis comes back empty, then the service notices, rebuilds what it kept there, and stores every admission made after', { timeout: 120_000 }, async (ctx) => {
    const { t, v, sale, back } = await saleWithRedisCrash(ctx, 'redis-empty', {}, { RECONCILE_INTERVAL_MS: '1000' });

    // Noticed and said: the metric and /readyz (the error log is the third witness).
    await waitFor('the data loss to be noticed', async () => ((await t.c.metrics.redisDataLosses.get()).values[0]?.value ?? 0) >= 1);
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.ok(ready.json().redis.dataLostAt, 'readyz names the data loss');

    const after = sale.admitted(back);
    assert.ok(after.length > 0, 'the sale went on after Redis came back');
    await waitForDrain(t.c, v.id, 60_000);
    const truth = await assertInvariants(t.c, v.id, after);
    assertContractAnswers(sale);
    // Only admissions answered before the crash and not stored yet may be gone: the price of
    // running Redis without persistence (how many: the pipeline's lag at that moment).
    const stored = new Set(truth.orders.map((o) => o.id));
    const lost = sale.admitted().filter((id) => !stored.has(id));
    const beforeCrash = new Set(sale.admitted().filter((id) => !after.includes(id)));
    ctx.diagnostic(`${sale.admitted().length} admitted, ${after.length} after Redis came back, ${lost.length} of ${beforeCrash.size} earlier ones lost in the crash`);
    assert.deepEqual(lost.filter((id) => !beforeCrash.has(id)), [], 'every admission lost was made before the crash');
    assert.equal(truth.redisStock, truth.dbStock, 'Redis rebuilt from the database');
  });

  it('when Redis comes back from its append-only file with ADMIT_DURABILITY=fsync, then every admission is stored', { timeout: 120_000 }, async (ctx) => {
    const { t, v, sale } = await saleWithRedisCrash(ctx, 'redis-aof', { appendfsync: 'always' }, { ADMIT_DURABILITY: 'fsync' });
    await waitForDrain(t.c, v.id, 60_000);
    const truth = await assertInvariants(t.c, v.id, sale.admitted());
    assertContractAnswers(sale);
    assert.equal(truth.orders.filter((o) => o.status === 'pending_payment').length, STOCK, 'sold out: demand was above supply');
    assert.equal((await t.c.metrics.redisDataLosses.get()).values[0]?.value ?? 0, 0, 'an AOF restart is not a data loss');
    ctx.diagnostic(`${sale.admitted().length} admitted, all stored`);
  });
});
