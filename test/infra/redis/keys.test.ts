// Where a voucher's keys live: its shard is fixed for its life, spread evenly for vouchers created
// now, and unchanged (id mod SHARDS) for vouchers created before hashed placement, whose keys and
// stream entries are already there.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EPOCH_MS, Snowflake } from '../../../src/ids/snowflake.js';
import { createKeySpace, HASHED_PLACEMENT_FROM_ID, HASHED_PLACEMENT_SINCE_MS } from '../../../src/infra/redis/keys.js';

/** Voucher ids as the API issues them: one per millisecond, from one worker. */
function vouchersOnePerMs(count: number, fromMs: number, workerId = 7): bigint[] {
  let ms = fromMs;
  const ids = new Snowflake(workerId, { now: () => ms });
  return Array.from({ length: count }, () => {
    ms += 1;
    return ids.next();
  });
}

describe('voucher placement', () => {
  it('the placement cut-over is the first Snowflake id of its moment', () => {
    assert.equal(HASHED_PLACEMENT_FROM_ID, BigInt(HASHED_PLACEMENT_SINCE_MS - EPOCH_MS) << 22n);
  });

  for (const shards of [16, 5, 64]) {
    it(`when vouchers are created one per millisecond, then they cover all ${shards} shards within ±20%`, () => {
      const keys = createKeySpace('sk', shards);
      // 1,000 per shard: ±20% is six standard deviations of an even spread, so a pass is no luck.
      const perShard = 1_000;
      const counts = new Array<number>(shards).fill(0);
      for (const id of vouchersOnePerMs(perShard * shards, HASHED_PLACEMENT_SINCE_MS + 86_400_000)) counts[keys.shardOf(id)]! += 1;
      for (const [shard, n] of counts.entries()) assert.ok(Math.abs(n - perShard) <= perShard * 0.2, `shard ${shard}: ${n} of ${perShard} expected`);
    });
  }

  it('when a voucher was created before hashed placement, then it stays on id mod SHARDS', () => {
    const keys = createKeySpace('sk', 16);
    const before = vouchersOnePerMs(50, HASHED_PLACEMENT_SINCE_MS - 1_000);
    for (const id of before) assert.equal(keys.shardOf(id), Number(id % 16n));
    assert.ok(before.every((id) => keys.voucher(id).startsWith(`sk:{s${id % 16n}}:`)));
  });

  it('a voucher keeps its shard, and every key of it carries that shard\'s tag', () => {
    const keys = createKeySpace('sk', 16);
    const [id] = vouchersOnePerMs(1, Date.now());
    const tag = `{s${keys.shardOf(id!)}}`;
    assert.equal(keys.shardOf(id!), keys.shardOf(id!));
    for (const key of [keys.voucher(id!), keys.buyers(id!), keys.idempotency(id!), keys.released(id!), keys.waitlist(id!), keys.voucherBucket(id!), keys.userBucket(id!, 9n)]) {
      assert.ok(key.includes(tag), key);
    }
    assert.ok(keys.orders(keys.shardOf(id!)).includes(tag));
  });
});
