import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { decodeId, EPOCH_MS } from '../../src/ids/snowflake.js';
import { LeasedIdGenerator } from '../../src/ids/worker-lease.js';
import { createScripts } from '../../src/infra/redis/scripts/index.js';
import { pino } from 'pino';
import { createCore } from '../../src/composition/core.js';
import { REDIS_URL, testConfig, testRedis } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

const { redis, keys } = testRedis('lease');

describe('leased worker ids', () => {
  it('when Redis is away at the first lease, then a later call leases (the failure is not kept)', async (ctx) => {
    // The core of a process that leases on its first id (an API leases at start).
    const core = await createCore(testConfig('lease-retry'), pino({ level: 'silent' }));
    ctx.after(() => core.close());
    // Closed and reconnecting: meanwhile commands are refused (no offline queue).
    const closed = new Promise((r) => core.redis.once('close', r));
    core.redis.disconnect(true);
    await closed;
    await assert.rejects(core.ids());
    await waitFor('Redis back', () => core.redis.status === 'ready');
    assert.ok((await core.ids()).next() > 0n);
  });

  it('when two generators run at once, then they hold different worker ids and never issue the same id', async () => {
    const scripts = createScripts(redis, keys);
    const a = await LeasedIdGenerator.start({ scripts, ttlMs: 10_000 });
    const b = await LeasedIdGenerator.start({ scripts, ttlMs: 10_000 });
    try {
      assert.notEqual(a.workerId, b.workerId);
      const ids = new Set<bigint>();
      let lastA = 0n;
      let lastB = 0n;
      for (let i = 0; i < 20_000; i++) {
        const x = a.next();
        const y = b.next();
        assert.ok(x > lastA && y > lastB, 'monotonic per generator');
        lastA = x;
        lastB = y;
        ids.add(x).add(y);
      }
      assert.equal(ids.size, 40_000);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('when the wall clock goes back while ids are issued, then each jump is reported once with its size and no id repeats', async () => {
    const scripts = createScripts(redis, keys);
    let clock = EPOCH_MS + 5_000_000;
    const jumps: number[] = [];
    const generator = await LeasedIdGenerator.start({ scripts, ttlMs: 10_000, now: () => clock, onClockBackwards: (ms) => jumps.push(ms) });
    try {
      const ids = new Set<bigint>();
      for (let i = 0; i < 100; i++) ids.add(generator.next());
      clock -= 5_000;
      for (let i = 0; i < 100; i++) ids.add(generator.next());
      clock += 1; // still behind: the same jump, not a second one
      for (let i = 0; i < 100; i++) ids.add(generator.next());
      assert.deepEqual(jumps, [5_000]);
      clock += 10_000; // caught up, then back again
      generator.next();
      clock -= 2_000;
      ids.add(generator.next());
      assert.deepEqual(jumps, [5_000, 2_000]);
      assert.equal(ids.size, 301);
    } finally {
      await generator.close();
    }
  });

  it('when a worker id is taken over after its holder stopped, then the successor starts after the last timestamp issued, even with its clock behind', async () => {
    const scripts = createScripts(redis, keys);
    const first = await LeasedIdGenerator.start({ scripts, ttlMs: 10_000, now: () => EPOCH_MS + 1_000_000 });
    const workerId = first.workerId!;
    const lastOfFirst = first.next();
    await first.close();
    // Force the successor onto the same worker id by leasing every other id first.
    const blockers: string[] = [];
    for (let w = 0; w < 1024; w++) if (w !== workerId) blockers.push(keys.workerLease(w));
    await Promise.all(blockers.map((k) => redis.set(k, 'someone-else', 'PX', 60_000)));
    const second = await LeasedIdGenerator.start({ scripts, ttlMs: 10_000, now: () => EPOCH_MS + 5_000 });
    try {
      assert.equal(second.workerId, workerId);
      const firstOfSecond = second.next();
      assert.ok(firstOfSecond > lastOfFirst);
      assert.ok(decodeId(firstOfSecond).timestampMs > decodeId(lastOfFirst).timestampMs);
    } finally {
      await second.close();
      await redis.del(...blockers);
    }
  });

  it('when another owner takes the worker id, then the generator moves to a fresh id at its next renewal', async () => {
    const scripts = createScripts(redis, keys);
    const gen = await LeasedIdGenerator.start({ scripts, ttlMs: 3_000 });
    try {
      const stolen = gen.workerId!;
      await redis.set(keys.workerLease(stolen), 'intruder', 'PX', 60_000);
      // Renewals run every ttl/3 (1 s); allow for a busy machine. Between losing the id and leasing
      // a fresh one, workerId is null (ids are refused meanwhile), so wait for the fresh one.
      const moved = () => gen.workerId !== null && gen.workerId !== stolen;
      await waitFor(() => `a fresh worker id (worker id ${gen.workerId}, stolen ${stolen})`, moved, 5_000, 100);
      assert.equal(decodeId(gen.next()).workerId, gen.workerId);
    } finally {
      await gen.close();
    }
  });

  it('when Redis cannot be reached to renew the lease, then ids are refused once it would have expired', async () => {
    const own = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    await new Promise((resolve) => own.once('ready', resolve));
    const gen = await LeasedIdGenerator.start({ scripts: createScripts(own, keys), ttlMs: 3_000 });
    try {
      gen.next();
      own.disconnect(); // renewals now fail
      const cutAt = performance.now();
      assert.equal(decodeId(gen.next()).workerId, gen.workerId, 'ids go on while the lease is valid');
      const refusal = await waitFor('ids to be refused', () => {
        try {
          gen.next();
          return null;
        } catch (err) {
          return err as Error;
        }
      }, 5_000);
      assert.match(refusal.message, /no valid worker lease/);
      // The last renewal was before the cut: the lease, as this process counts it, ends within one lifetime.
      const refusedAfter = performance.now() - cutAt;
      assert.ok(refusedAfter <= 3_000 + 500, `ids served ${Math.round(refusedAfter)} ms after the cut`);
    } finally {
      await gen.close();
      own.disconnect();
    }
  });
});
