import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONSUMER_GROUP, trimAcknowledged } from '../../src/pipeline/maintenance.js';
import { testRedis } from '../support/helpers.js';

const { redis, keys } = testRedis('trim');
const prefix = keys.prefix;

async function fill(stream: string, n: number): Promise<string[]> {
  await redis.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM');
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await redis.xadd(stream, '*', 'i', String(i)))!);
  return ids;
}

describe('stream trimming', () => {
  it('when some entries are acknowledged and some pending, then only acknowledged ones below the oldest pending go', async () => {
    const stream = `${prefix}:a`;
    const ids = await fill(stream, 1000);
    await redis.xreadgroup('GROUP', CONSUMER_GROUP, 'c1', 'COUNT', 1000, 'STREAMS', stream, '>');
    await redis.xack(stream, CONSUMER_GROUP, ...ids.slice(0, 600), ...ids.slice(700));
    await trimAcknowledged(redis, stream);
    const left = (await redis.xrange(stream, '-', '+')).map(([id]) => id);
    for (const id of ids.slice(600, 700)) assert.ok(left.includes(id), `pending entry ${id} kept`);
    assert.ok(left.length < 1000 - 500, `acknowledged entries trimmed (left ${left.length})`);
  });

  it('when nothing is pending, then undelivered entries are kept and delivered ones trimmed', async () => {
    const stream = `${prefix}:b`;
    const ids = await fill(stream, 500);
    await redis.xreadgroup('GROUP', CONSUMER_GROUP, 'c1', 'COUNT', 300, 'STREAMS', stream, '>');
    await redis.xack(stream, CONSUMER_GROUP, ...ids.slice(0, 300));
    await trimAcknowledged(redis, stream);
    const left = (await redis.xrange(stream, '-', '+')).map(([id]) => id);
    for (const id of ids.slice(300)) assert.ok(left.includes(id), `undelivered entry ${id} kept`);
    assert.ok(left.length < 500, 'delivered and acknowledged entries trimmed');
  });

  it('when acknowledged entries are younger than the window kept, then they stay, and older ones go', async () => {
    const stream = `${prefix}:c`;
    await redis.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM');
    const [seconds] = await redis.time();
    const now = Number(seconds) * 1000;
    // Ids by Redis's clock: 400 entries a minute old, then 100 of the last second.
    const old = await Promise.all(Array.from({ length: 400 }, (_, i) => redis.xadd(stream, `${now - 60_000}-${i + 1}`, 'i', String(i))));
    const young = await Promise.all(Array.from({ length: 100 }, (_, i) => redis.xadd(stream, `${now - 1_000}-${i + 1}`, 'i', String(i))));
    await redis.xreadgroup('GROUP', CONSUMER_GROUP, 'c1', 'COUNT', 500, 'STREAMS', stream, '>');
    await redis.xack(stream, CONSUMER_GROUP, ...old.map(String), ...young.map(String));
    await trimAcknowledged(redis, stream, 30_000);
    const left = (await redis.xrange(stream, '-', '+')).map(([id]) => id);
    for (const id of young) assert.ok(left.includes(id!), `young entry ${id} kept`);
    assert.ok(left.length < 500, `old entries trimmed (left ${left.length})`);
  });
});
