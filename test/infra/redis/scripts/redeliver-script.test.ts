// redeliver-2.lua rebuilds a lost stream entry from the order's in-flight record: a waitlist
// promotion keeps its mark (lib/admission.lua), so the pipeline still writes its `promoted` event
// when it stores the order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScripts } from '../../../../src/infra/redis/scripts/index.js';
import { type InflightOrder, inflightRecord, isMalformed, parseEntry, parseInflight } from '../../../../src/infra/redis/records.js';
import { testRedis } from '../../../support/helpers.js';

const { redis, keys } = testRedis('redeliver');
const scripts = createScripts(redis, keys);
const shard = 1;

async function redeliverAndRead(order: InflightOrder) {
  await redis.hset(keys.inflight(shard), order.orderId, inflightRecord(order));
  assert.ok(await scripts.redeliver(order));
  const [newest] = (await redis.xrevrange(keys.orders(shard), '+', '-', 'COUNT', 1)) as [string, string[]][];
  const entry = parseEntry(shard, newest!, 1);
  assert.ok(!isMalformed(entry), JSON.stringify(newest));
  const record = parseInflight(order.orderId, (await redis.hget(keys.inflight(shard), order.orderId))!, shard);
  return { entry, record, streamId: newest![0], fields: newest![1] };
}

describe('redelivery of an order whose stream entry was lost', () => {
  const order: InflightOrder = { orderId: '91', voucherId: '7', userId: '9', quantity: 2, createdAt: new Date(1_700_000_000_123), streamId: '1-1', shard, promoted: false };

  it('gives an ordinary order a new entry and points its record at it', async () => {
    const { entry, record, streamId, fields } = await redeliverAndRead(order);
    assert.deepEqual(fields, ['d', '91|7|9|2|1700000000123']);
    assert.deepEqual({ ...entry, deliveries: undefined }, { ...order, voucherId: 7n, streamId, deliveries: undefined });
    assert.deepEqual(record, { ...order, streamId });
  });

  it('keeps the mark of a waitlist promotion in the new entry and the record', async () => {
    const promoted = { ...order, orderId: '92', promoted: true };
    const { entry, record, streamId, fields } = await redeliverAndRead(promoted);
    assert.deepEqual(fields, ['d', '92|7|9|2|1700000000123|p']);
    assert.equal(!isMalformed(entry) && entry.promoted, true);
    assert.deepEqual(record, { ...promoted, streamId });
  });

  it('does nothing when the record changed since it was observed', async () => {
    await redis.hset(keys.inflight(shard), '93', 'something else');
    assert.equal(await scripts.redeliver({ ...order, orderId: '93' }), false);
  });
});
