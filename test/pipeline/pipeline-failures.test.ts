import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createDb } from '../../src/infra/db/database.js';
import { AdmitCode } from '../../src/infra/redis/scripts/admission.js';
import { CONSUMER_GROUP, ensureConsumerGroups } from '../../src/pipeline/maintenance.js';
import { burst, createVoucher, DATABASE_PORT, DATABASE_SERVER, databaseServerVia, range, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { type Running, startSeckill } from '../../support/processes.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

/** `seckill worker` on the test app's data; its errors show in the test output. */
function startWorker(t: TestApp, name: string): Running {
  const c = t.c.config;
  const worker = startSeckill(['worker'], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      REDIS_URL: c.redisUrl,
      DATABASE_URL: c.databaseUrl,
      REDIS_PREFIX: c.redisPrefix,
      SHARDS: String(c.shards),
      JWT_SECRET: c.jwtSecret,
      CLAIM_IDLE_MS: String(c.claimIdleMs),
      PIPELINE_BATCH: String(c.pipelineBatch),
      CONSUMER_NAME: name,
      LOG_LEVEL: 'error',
    },
  });
  after(() => worker.stop('SIGKILL')); // when the test fails before it stops the worker
  return worker;
}

describe('pipeline failures', () => {
  describe('a worker killed in the middle of a batch', async () => {
    const t = await startTestApp(suiteScope(), 'crash', { CLAIM_IDLE_MS: '1000', PIPELINE_BATCH: '100' });

    it('when worker A is SIGKILLed holding entries, then worker B takes them over and every order is stored once', async () => {
      const v = await createVoucher(t, { stock: 20_000 });
      await ensureConsumerGroups(t.c.redis, t.c.keys);
      const ids = new Set<string>();
      const results = await Promise.all(
        range(1, 20_000).map(async (u) => {
          const r = await t.c.scripts.admit({ voucherId: BigInt(v.id), userId: BigInt(u), orderId: BigInt(1_000_000 + u), quantity: 1 });
          return r.code === AdmitCode.ADMITTED ? r.orderId : null;
        }),
      );
      for (const id of results) if (id) ids.add(id);
      assert.equal(ids.size, 20_000);

      const stream = t.c.keys.orders(t.c.keys.shardOf(BigInt(v.id)));
      const pendingCount = async () => ((await t.c.redis.xpending(stream, CONSUMER_GROUP)) as [number])[0];
      const storedCount = async () =>
        Number((await t.c.db.selectFrom('orders').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      // Kill worker A once it has stored something while holding delivered, unacknowledged
      // entries. A kill can land just after a batch was acknowledged; then try again.
      let heldByDeadWorkers = 0;
      for (let attempt = 1; heldByDeadWorkers === 0; attempt++) {
        assert.ok(attempt <= 10, 'could not kill a worker in the middle of a batch');
        const a = startWorker(t, `worker-a${attempt}`);
        const before = await storedCount();
        await waitFor('worker A to store orders while it holds entries', async () => (await storedCount()) > before && (await pendingCount()) > 0, 60_000, 5);
        await a.stop('SIGKILL');
        heldByDeadWorkers = await pendingCount();
      }
      assert.ok((await storedCount()) < 20_000, 'killed before the backlog was drained');

      const b = startWorker(t, 'worker-b');
      await waitForDrain(t.c, v.id, 60_000);
      assert.equal(await b.stop('SIGTERM'), 0, 'SIGTERM exits cleanly');
      await assertInvariants(t.c, v.id, [...ids]);
    });
  });

  describe('the database unreachable during a sale', async () => {
    const proxy = new TcpProxy('127.0.0.1', DATABASE_PORT);
    const port = await proxy.start();
    // After hooks run in the order they are added: the proxy is back before the app's own
    // clean-up drops the database through it, and stops after it.
    after(() => proxy.restore());
    const t = await startTestApp(suiteScope(), 'dbdown', { CLAIM_IDLE_MS: '2000' }, databaseServerVia(port));
    after(() => proxy.stop());

    it('when the database goes away, then admissions continue, nothing is lost, and the backlog drains when it returns', async () => {
      const v = await createVoucher(t, { stock: 400 });
      await t.c.startPipeline();
      const early = await burst(t, v.id, range(1, 100));
      await waitForDrain(t.c, v.id);

      const retries = async () => (await t.c.metrics.retries.get()).values[0]?.value ?? 0;
      const retriedBefore = await retries();
      await proxy.cut();
      const during = await burst(t, v.id, range(101, 300));
      assert.equal(during.length, 300, 'admission does not need the database');
      const stream = t.c.keys.orders(t.c.keys.shardOf(BigInt(v.id)));
      const pending = async () => ((await t.c.redis.xpending(stream, CONSUMER_GROUP)) as [number])[0];
      // The lanes hold what they read (not necessarily all 300) and retry it.
      await waitFor('the pipeline to read new entries and fail to store them', async () => (await retries()) > retriedBefore && (await pending()) > 0);
      const direct = createDb(`${DATABASE_SERVER}/${new URL(t.c.config.databaseUrl).pathname.slice(1)}`, 1);
      try {
        const stored = await direct.selectFrom('orders').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
        assert.equal(Number(stored.n), 100, 'nothing stored while the database is unreachable');
      } finally {
        await direct.destroy();
      }
      assert.equal((await t.c.inflight.ofVoucher(BigInt(v.id))).length, 300);

      await proxy.restore();
      await waitForDrain(t.c, v.id, 30_000);
      const truth = await assertInvariants(t.c, v.id, [...early, ...during]);
      assert.equal(truth.orders.length, 400);
      assert.equal(truth.dbStock, 0);
    });
  });
});
