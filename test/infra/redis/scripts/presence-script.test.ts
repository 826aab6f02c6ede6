// Listener presence is timed by Redis alone: what the caller's clock says does not enter, so a
// process whose wall clock was set back is still seen listening, and a presence that is not renewed
// lapses after its ttl.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScripts } from '../../../../src/infra/redis/scripts/index.js';
import { testRedis } from '../../../support/helpers.js';

const { redis, keys } = testRedis('presence');
const scripts = createScripts(redis, keys);

describe('listener presence (presence-1.lua)', () => {
  it('when two members announce themselves, then both count until their ttl runs out, and an expired one is removed', async () => {
    const set = `${keys.orderEvents()}:listening:test`;
    assert.equal(await scripts.presence(set, null, 300), 0);
    assert.equal(await scripts.presence(set, 'a', 300), 1);
    assert.equal(await scripts.presence(set, 'b', 1_500), 2);
    assert.equal(await scripts.presence(set, null, 300), 2);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await scripts.presence(set, null, 300), 1);
    assert.deepEqual(await redis.zrange(set, '0', '-1'), ['b']);
    // A renewal moves the expiry forward from Redis's own now.
    await scripts.presence(set, 'b', 60_000);
    const [, expiresAt] = await redis.zrange(set, '0', '-1', 'WITHSCORES');
    const [seconds, micros] = await redis.time();
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    assert.ok(Math.abs(Number(expiresAt) - (redisNow + 60_000)) < 1_000, `expires at ${expiresAt}, Redis now ${redisNow}`);
  });
});
