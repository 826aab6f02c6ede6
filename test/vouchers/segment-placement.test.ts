// Where a voucher's segments go and who claims in which: pure functions of ids and SHARDS.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { chooseSegmentShards, homeShard, splitStock } from '../../src/vouchers/segments.js';

const keys = createKeySpace('t', 12);
const id = 386094071808012345n; // a Snowflake id

describe('segment placement', () => {
  it('puts K segments on K distinct shards, the first on the id\'s own shard', () => {
    for (const k of [1, 2, 3, 5, 12]) {
      const shards = chooseSegmentShards(id, k, keys);
      assert.equal(shards.length, k);
      assert.equal(new Set(shards).size, k);
      assert.equal(shards[0], keys.shardOf(id));
    }
    assert.throws(() => chooseSegmentShards(id, 13, keys), RangeError);
  });

  it('with the masters known, puts one segment on each master before doubling up', () => {
    const masterOf = (shard: number) => `m${shard % 3}`; // three masters, four shards each
    const shards = chooseSegmentShards(id, 4, keys, masterOf);
    assert.equal(new Set(shards.slice(0, 3).map(masterOf)).size, 3);
    assert.equal(masterOf(shards[0]!), masterOf(keys.shardOf(id)));
    assert.equal(new Set(shards).size, 4);
  });

  it('splits the stock evenly, the remainder to the first segments', () => {
    assert.deepEqual(splitStock(10, 3), [4, 3, 3]);
    assert.deepEqual(splitStock(2, 3), [1, 1, 0]);
    assert.deepEqual(splitStock(7, 1), [7]);
  });

  it('homes buyers evenly over the segments, each always in the same one', () => {
    const v = { id, segmentShards: [3, 7, 11] };
    const counts = new Map<number, number>();
    for (let u = 1n; u <= 30_000n; u++) counts.set(homeShard(v, u, keys), (counts.get(homeShard(v, u, keys)) ?? 0) + 1);
    assert.deepEqual([...counts.keys()].sort((a, b) => a - b), [3, 7, 11]);
    for (const n of counts.values()) assert.ok(Math.abs(n - 10_000) < 500, `${n} buyers in one segment`);
    assert.equal(homeShard(v, 42n, keys), homeShard(v, '42', keys));
    assert.equal(homeShard({ id, segmentShards: null }, 42n, keys), keys.shardOf(id));
  });
});
