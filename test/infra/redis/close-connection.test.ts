// Closing connections while Redis is down: whatever a connection still owes fails at once, so
// nothing that awaits it (a pipeline lane's blocking read, and shutdown with it) waits for ever.
// (ioredis' own disconnect() leaves those pending while the connection waits to reconnect.)
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { closeConnection, createRedis, dedicatedConnection, dropConnection, redisReady } from '../../../src/infra/redis/connections.js';
import type { RedisClient } from '../../../src/infra/redis/client.js';
import { startSecondContainer, startTestApp } from '../../support/helpers.js';
import { startPrivateRedis } from '../../../support/private-redis.js';
import { waitFor } from '../../../support/wait.js';

const settled = (p: Promise<unknown>) => p.then(() => 'answered', (err: Error) => `failed: ${err.message}`);
const within = (ms: number, p: Promise<string>) => Promise.race([p, new Promise<string>((resolve) => setTimeout(() => resolve(`still pending after ${ms} ms`), ms))]);

async function brokenReader(label: string) {
  const redis = await startPrivateRedis();
  after(() => redis.stop());
  const settings = { redisUrl: redis.url, redisClusterNodes: [], redisSentinels: [], redisSentinelName: '', redisCommandTimeoutMs: 1_000 };
  const shared = createRedis(settings, pino({ level: 'silent' }), label);
  shared.on('error', () => {});
  after(() => dropConnection(shared));
  const reader: RedisClient = dedicatedConnection(shared, `${label}-reader`);
  reader.on('error', () => {});
  await reader.ping();
  // In flight when Redis dies, then one queued for the reconnect.
  const inFlight = settled(reader.xread('BLOCK', 0, 'STREAMS', `${label}:stream`, '$'));
  await waitFor('the read to block in Redis', async () => /^blocked_clients:1\r?$/m.test(await shared.info('clients')), 5_000);
  await redis.kill();
  await waitFor('the reader to wait for a reconnect', () => reader.status === 'reconnecting', 5_000);
  const queued = settled(reader.get(`${label}:key`));
  return { reader, inFlight, queued };
}

describe('closing a connection while Redis is down', () => {
  it('when a reader waiting to reconnect is dropped, then its read in flight and its queued command fail at once and it ends', async () => {
    const { reader, inFlight, queued } = await brokenReader('close-conn-drop');
    dropConnection(reader);
    assert.match(await within(1_000, inFlight), /^failed: Connection is closed/);
    assert.match(await within(1_000, queued), /^failed: Connection is closed/);
    assert.equal(reader.status, 'end');
  });

  it('when such a reader is closed, then closing does not wait for Redis', async () => {
    const { reader, inFlight, queued } = await brokenReader('close-conn-close');
    assert.equal(await within(1_000, closeConnection(reader).then(() => 'closed')), 'closed');
    assert.match(await within(1_000, inFlight), /^failed/);
    assert.match(await within(1_000, queued), /^failed/);
  });

  it('when a ready connection is closed, then it quits', async () => {
    const redis = await startPrivateRedis();
    after(() => redis.stop());
    const settings = { redisUrl: redis.url, redisClusterNodes: [], redisSentinels: [], redisSentinelName: '', redisCommandTimeoutMs: 1_000 };
    const conn = createRedis(settings, pino({ level: 'silent' }), 'close-conn-ready');
    await redisReady(conn, 5_000);
    await conn.set('close-conn-ready:k', '1');
    await closeConnection(conn);
    await waitFor('the connection to end', () => conn.status === 'end', 2_000);
  });

  it('when Redis dies under the running pipeline, then the workers and the whole instance still close', { timeout: 60_000 }, async (ctx) => {
    // The instance runs on a Redis of its own (the file's app, on the shared one, owns the database).
    const first = await startTestApp(ctx, 'close-pipe');
    const redis = await startPrivateRedis();
    after(() => redis.stop()); // after the instance: after hooks run in order
    const c = await startSecondContainer(ctx, first, { REDIS_URL: redis.url, PIPELINE_LANES: '4' });
    await c.startWorkers();
    let refused = false;
    c.redis.on('error', (err: NodeJS.ErrnoException) => void (refused ||= err.code === 'ECONNREFUSED'));
    await redis.kill();
    // The lanes' connections retry on the same schedule as the shared one: once its reconnect has
    // been refused and it waits for the next, so do they.
    await waitFor('a reconnect to be refused', () => refused && c.redis.status === 'reconnecting', 10_000);
    assert.equal(await within(15_000, settled(c.close())), 'answered', 'the instance closes while its Redis is down');
  });
});
