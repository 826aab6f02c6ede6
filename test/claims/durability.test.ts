// What a 202 guarantees (ADMIT_DURABILITY): the service refuses a promise its Redis cannot keep,
// and with `replica` an admission the replicas did not confirm is never answered 202, not even
// to a retry with the same Idempotency-Key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';
import { dropDatabase } from '../../src/infra/db/database.js';
import { claim, createVoucher, startTestApp, testEnv } from '../support/helpers.js';
import { assertInvariants } from '../support/invariants.js';
import { startPrivateRedis, startReplicatedRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';

describe('admission durability', () => {
  it('when ADMIT_DURABILITY=fsync and Redis does not fsync its append-only file, then start-up fails naming both settings', async (ctx) => {
    const redis = await startPrivateRedis();
    ctx.after(() => redis.stop());
    const config = loadConfig(testEnv('fsync-refused', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'fsync' }));
    ctx.after(() => dropDatabase(config.databaseUrl));
    await assert.rejects(createContainer(config, pino({ level: 'silent' }), { migrate: true }), /ADMIT_DURABILITY=fsync needs Redis with appendonly yes and appendfsync always \(found appendonly no, appendfsync everysec\)/);
  });

  it('when ADMIT_DURABILITY=replica and Redis takes writes without its replicas, then start-up fails naming min-replicas-to-write', async (ctx) => {
    const redis = await startPrivateRedis();
    ctx.after(() => redis.stop());
    const config = loadConfig(testEnv('replica-refused', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'replica' }));
    ctx.after(() => dropDatabase(config.databaseUrl));
    await assert.rejects(createContainer(config, pino({ level: 'silent' }), { migrate: true }), /ADMIT_DURABILITY=replica needs Redis with min-replicas-to-write 1 \(ADMIT_REPLICAS\) or more.*found 0/);
  });

  it('when ADMIT_DURABILITY=replica and the master has lost its replica, then the claim and its retry are 503 with Retry-After, and nothing is admitted', async (ctx) => {
    const redis = await startReplicatedRedis({ minReplicas: 1 });
    const t = await startTestApp(ctx, 'lost-replica', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'replica', ADMIT_WAIT_TIMEOUT_MS: '50' });
    ctx.after(() => redis.stop()); // after hooks run in order: the app closes first
    await t.c.startPipeline();
    const v = await createVoucher(t, { stock: 5 });
    await redis.killReplica();
    // Until the master sees the link close, it still counts the replica (for up to min-replicas-max-lag).
    const admin = new Redis(redis.url);
    await waitFor('the master to notice its replica gone', async () => /connected_slaves:0/.test(await admin.info('replication')), 10_000);
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await claim(t, v.id, 9, { idempotencyKey: 'k' });
      console.log('BODY', res.statusCode, res.body);
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'UNAVAILABLE');
      assert.ok(Number(res.headers['retry-after']) >= 1);
    }
    // The master alone wrote nothing: no unit taken, no order.
    const truth = await assertInvariants(t.c, v.id, []);
    assert.equal(truth.orders.length, 0);
    assert.equal(truth.dbStock, 5);
    // An operator lowering the bar lets the master write again (the test's cleanup deletes its keys).
    await admin.config('SET', 'min-replicas-to-write', '0');
    await admin.quit();
  });

  it('when ADMIT_DURABILITY=replica and the script cache was flushed, then the WAIT that confirms an admission follows the script that made it (one admissions connection per process)', async (ctx) => {
    const redis = await startReplicatedRedis({ minReplicas: 1 });
    const t = await startTestApp(ctx, 'noscript', { REDIS_URL: redis.url, ADMIT_DURABILITY: 'replica' });
    ctx.after(() => redis.stop());
    const v = await createVoucher(t, { stock: 5 });
    assert.equal((await claim(t, v.id, 1)).statusCode, 202);
    await t.c.startQueue(); // the queue's draw admits too, on the same connection
    const admin = new Redis(redis.url);
    const sent: string[] = [];
    const lastScript = () => sent.map((c) => c.startsWith('eval')).lastIndexOf(true);
    try {
      const clients = String(await admin.client('LIST')).split('\n').filter((line) => line.includes('name=seckill-admissions'));
      assert.equal(clients.length, 1, 'one admissions connection per process');
      const admissions = /addr=(\S+)/.exec(clients[0]!)![1];
      // What the admissions connection sends, in the order the server runs it.
      const monitor = await admin.monitor();
      monitor.on('monitor', (_time: string, args: string[], source: string) => source === admissions && sent.push(args[0]!.toLowerCase()));
      try {
        await admin.script('FLUSH');
        assert.equal((await claim(t, v.id, 2)).statusCode, 202);
        await waitFor('the WAIT after the admission seen', () => sent.lastIndexOf('wait') > lastScript(), 2_000).catch(() => undefined);
      } finally {
        monitor.disconnect();
      }
    } finally {
      await admin.quit();
    }
    // NOSCRIPT: the script is sent again, and a WAIT after it (ioredis' own fallback sends it after the WAIT).
    assert.ok(sent.indexOf('evalsha') < lastScript(), `the script was called again after NOSCRIPT: ${sent.join(' ')}`);
    assert.ok(sent.lastIndexOf('wait') > lastScript(), `a WAIT follows the admission: ${sent.join(' ')}`);
  });
});
