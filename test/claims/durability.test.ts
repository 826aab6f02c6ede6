// What a 202 guarantees (ADMIT_DURABILITY): the service refuses a promise its Redis cannot keep,
// and with `replica` an admission the replicas did not confirm is never answered 202, not even
// to a retry with the same Idempotency-Key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { claim, createVoucher, startTestApp, testEnv } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { startPrivateRedis } from '../support/private-redis.js';

describe('admission durability', () => {
  it('when ADMIT_DURABILITY=fsync and Redis does not fsync its append-only file, then start-up fails naming both settings', async (ctx) => {
    const redis = await startPrivateRedis();
    ctx.after(() => redis.stop());
    const config = loadConfig(testEnv('fsync-refused', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'fsync' }));
    ctx.after(() => dropDatabase(config.databaseUrl));
    await assert.rejects(createContainer(config, pino({ level: 'silent' }), { migrate: true }), /ADMIT_DURABILITY=fsync needs Redis with appendonly yes and appendfsync always \(found appendonly no, appendfsync everysec\)/);
  });

  it('when ADMIT_DURABILITY=replica and no replica confirms, then the claim and its retry are 503 with Retry-After, and the admission stands', async (ctx) => {
    const redis = await startPrivateRedis(); // no replica at all
    const t = await startTestApp('no-replica', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'replica', ADMIT_WAIT_TIMEOUT_MS: '50' });
    ctx.after(() => redis.stop());
    await t.c.startPipeline();
    const v = await createVoucher(t, { stock: 5 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await claim(t, v.id, 9, { idempotencyKey: 'k' });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'UNAVAILABLE');
      assert.ok(Number(res.headers['retry-after']) >= 1);
    }
    // The admission was made (and took one unit) though it was not confirmed: it is stored.
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, []);
    assert.equal(truth.orders.length, 1);
    assert.equal(truth.dbStock, 4);
  });
});
