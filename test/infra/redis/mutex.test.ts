// A lock's refresh that Redis refuses must not end the process (redis-semaphore's timer does not
// catch it): on a Redis server of this file's own, made to refuse writes as a master that lost its
// replicas does (min-replicas-to-write), the lock stays held for its timeout, then is lost.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { RefreshSafeMutex } from '../../../src/infra/redis/mutex.js';
import { startPrivateRedis } from '../../../support/private-redis.js';
import { waitFor } from '../../../support/wait.js';

const server = await startPrivateRedis();
const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
after(async () => {
  redis.disconnect();
  await server.stop();
});

describe('RefreshSafeMutex', () => {
  it('when Redis refuses its refreshes, then it is held for its timeout, lost after it, and nothing is thrown', async () => {
    const lost: Error[] = [];
    const mutex = new RefreshSafeMutex(redis, 'lock', { lockTimeout: 1_500, refreshInterval: 100, acquireAttemptsLimit: 1, onLockLost: (err) => lost.push(err) });
    assert.equal(await mutex.tryAcquire(), true);
    await redis.config('SET', 'min-replicas-to-write', '1');
    try {
      const refusedAt = Date.now();
      await assert.rejects(redis.set('probe', '1'), /NOREPLICAS/, 'writes are refused');
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(mutex.isAcquired, true, 'held while its key still lives');
      assert.deepEqual(lost, []);
      await waitFor('the lock lost', () => lost.length === 1, 3_000, 50);
      assert.ok(Date.now() - refusedAt >= 1_300, 'not before its timeout');
      assert.equal(mutex.isAcquired, false);
    } finally {
      await redis.config('SET', 'min-replicas-to-write', '0');
    }
  });

  it('when its key is gone, then the refresh finds it so and the lock is lost, as with the plain Mutex', async () => {
    const lost: Error[] = [];
    const mutex = new RefreshSafeMutex(redis, 'gone', { lockTimeout: 5_000, refreshInterval: 100, acquireAttemptsLimit: 1, onLockLost: (err) => lost.push(err) });
    assert.equal(await mutex.tryAcquire(), true);
    await redis.del('mutex:gone'); // redis-semaphore's key for 'gone'
    await waitFor('the lock lost', () => lost.length === 1, 3_000, 50);
    assert.equal(mutex.isAcquired, false);
  });
});
