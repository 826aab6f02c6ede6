import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createPoints } from '../../examples/points-consumer/points.js';
import { REDIS_URL, uniqueName } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';

const prefix = uniqueName('points');
const redis = new Redis(REDIS_URL);
after(async () => {
  await deleteKeys(redis, `${prefix}:*`);
  redis.disconnect();
});

const balance = async (userId: string) => Number((await redis.hget(`${prefix}:balance`, userId)) ?? 0);

/** A Redis client whose connection dies right after its first reply, as a consumer killed mid-message. */
async function dyingAfterFirstReply(): Promise<Redis> {
  const client = new Redis(REDIS_URL, { enableOfflineQueue: false, retryStrategy: () => null });
  await new Promise((resolve) => client.once('ready', resolve));
  return new Proxy(client, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const reply = value.apply(target, args);
        if (reply instanceof Promise) void reply.finally(() => target.disconnect()).catch(() => undefined);
        return reply;
      };
    },
  });
}

describe('points consumer', () => {
  it('when an event is delivered twice, then its points are granted once', async () => {
    const points = createPoints(redis, prefix);
    const paid = { eventId: '11', userId: '7', quantity: 2 };
    assert.equal(await points.grantOnce(paid), true);
    assert.equal(await points.grantOnce(paid), false, 'the repeat is skipped');
    assert.equal(await balance('7'), 20);
  });

  it('when the consumer dies while handling an event, then the redelivery still has its points granted exactly once', async () => {
    const paid = { eventId: '12', userId: '8', quantity: 1 };
    await createPoints(await dyingAfterFirstReply(), prefix).grantOnce(paid).catch(() => undefined);
    await createPoints(redis, prefix).grantOnce(paid); // the broker redelivers the unacknowledged message
    assert.equal(await balance('8'), 10);
  });

  it('when granting fails, then the event is not marked and its redelivery grants the points', async () => {
    const points = createPoints(redis, prefix);
    await redis.hset(`${prefix}:balance`, '9', 'not a number');
    await assert.rejects(points.grantOnce({ eventId: '13', userId: '9', quantity: 1 }));
    await redis.hdel(`${prefix}:balance`, '9');
    assert.equal(await points.grantOnce({ eventId: '13', userId: '9', quantity: 1 }), true);
    assert.equal(await balance('9'), 10);
  });
});
