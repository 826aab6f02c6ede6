// A Sentinel connection whose reconnect is cut short by a failover notice comes back by itself.
// ioredis' failover detector, on +switch-master, stops the connector; when that lands while a
// reconnect is still asking the sentinels for the master, the attempt fails "Connection is closed."
// and ioredis leaves the client ended for good. Here the detector's step is taken by hand at that
// moment (the connector's disconnect(), as FailoverDetector.disconnect() does), on a real topology.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { closeConnection, createRedis, dedicatedConnection, redisReady } from '../../../src/infra/redis/connections.js';
import { testConfig } from '../../support/helpers.js';
import { startSentinelTopology } from '../../../support/private-redis.js';
import { waitFor } from '../../../support/wait.js';

const topology = await startSentinelTopology();
after(() => topology.stop());
const settings = testConfig('sentinel-reconnect', { REDIS_SENTINELS: topology.sentinels, REDIS_SENTINEL_NAME: topology.name });

/** Reconnects `redis`, and stops its connector in the middle of asking the sentinels: the race, on purpose. */
async function abortReconnect(redis: Redis): Promise<void> {
  const connector = (redis as unknown as { connector: { disconnect(): void } }).connector;
  const aborted = new Promise<void>((resolve) => redis.once('connecting', () => (connector.disconnect(), resolve())));
  redis.disconnect(true); // a reconnect, as after a lost link
  await aborted;
}

describe('a Sentinel connection and a failover noticed while it reconnects', () => {
  for (const kind of ['shared', 'dedicated'] as const) {
    it(`when the ${kind} connection's reconnect is cut short, then it connects again and answers`, { timeout: 30_000 }, async () => {
      const shared = createRedis(settings, pino({ level: 'silent' }), `sentinel-reconnect-${kind}`);
      shared.on('error', () => {});
      after(() => closeConnection(shared));
      const redis = (kind === 'shared' ? shared : dedicatedConnection(shared, 'sentinel-reconnect-reader')) as Redis;
      redis.on('error', () => {});
      if (redis !== shared) after(() => closeConnection(redis));
      await redisReady(redis, 10_000);
      const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
      await abortReconnect(redis);
      await ended; // ioredis gave the client up: without the guard it stays so
      await waitFor('the connection to be ready again', () => redis.status === 'ready', 10_000);
      assert.equal(await redis.ping(), 'PONG');
    });
  }

  // Closed while ready, it ends from `close`; closed while it reconnects, it ends from `connecting`
  // as the cut-short reconnect does, and only ioredis' mark of a close asked for tells them apart.
  for (const when of ['ready', 'reconnecting'] as const) {
    it(`when a connection is closed on purpose while ${when}, then it stays closed`, { timeout: 30_000 }, async () => {
      const redis = createRedis(settings, pino({ level: 'silent' }), `sentinel-reconnect-closed-${when}`) as Redis;
      redis.on('error', () => {});
      await redisReady(redis, 10_000);
      if (when === 'reconnecting') {
        const connecting = new Promise<void>((resolve) => redis.once('connecting', () => resolve()));
        redis.disconnect(true);
        await connecting;
      }
      await closeConnection(redis);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(redis.status, 'end');
    });
  }
});
