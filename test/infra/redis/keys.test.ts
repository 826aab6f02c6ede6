// Where a voucher's keys live: its shard is `mix(id) % SHARDS`, fixed for the life of the data,
// spread evenly over the shards, and every key of one segment is in the slot of its shard's tag.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Snowflake } from '../../../src/ids/snowflake.js';
import { allShards, createKeySpace, mix } from '../../../src/infra/redis/keys.js';

/** murmur3's finaliser written again in bigint arithmetic (no Math.imul), to check mix() against. */
function referenceMix(id: bigint): bigint {
  const M = 0xffffffffn;
  const mul = (a: bigint, b: bigint) => (a * b) & M;
  let h = (id & M) ^ mul(id >> 32n, 0x9e3779b1n);
  h = mul(h ^ (h >> 16n), 0x85ebca6bn);
  h = mul(h ^ (h >> 13n), 0xc2b2ae35n);
  return h ^ (h >> 16n);
}

/** The part of a key Redis Cluster hashes: between the first `{` and the next `}`, if not empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** Voucher ids as one API process issues them: `perMs` per millisecond, from one worker. */
function consecutiveIds(count: number, perMs: number, workerId = 7): bigint[] {
  let ms = Date.UTC(2027, 0, 1);
  let issued = 0;
  const ids = new Snowflake(workerId, { now: () => ms });
  return Array.from({ length: count }, () => {
    if (issued++ % perMs === 0) ms += 1;
    return ids.next();
  });
}

describe('voucher placement', () => {
  it('places known ids on known shards (placement is fixed for the life of the data)', () => {
    // Computed outside this code base from murmur3's fmix32 over lo32 ^ (hi32 · 0x9e3779b1).
    const known: [bigint, number, number][] = [
      [0n, 0, 0],
      [1n, 1364076727, 7],
      [16n, 1428509628, 12],
      [4194304n, 3219665804, 12],
      [123456789012345678n, 1349375121, 1],
      [386094071808012345n, 2215918049, 1],
      [9223372036854775807n, 167747872, 0],
    ];
    const keys = createKeySpace('sk', 16);
    for (const [id, hash, shard] of known) {
      assert.equal(mix(id), hash, `mix(${id})`);
      assert.equal(keys.shardOf(id), shard, `shard of ${id}`);
    }
  });

  it('agrees with murmur3 written in bigint arithmetic, and picks a shard in range, for any id', () => {
    const ids = [...consecutiveIds(2_000, 1), ...consecutiveIds(2_000, 500, 1023), 2n ** 63n - 1n, 2n ** 32n - 1n, 2n ** 32n];
    for (const shards of [1, 5, 16, 64]) {
      const keys = createKeySpace('sk', shards);
      for (const id of ids) {
        assert.equal(BigInt(mix(id)), referenceMix(id), `mix(${id})`);
        assert.equal(keys.shardOf(id), Number(referenceMix(id) % BigInt(shards)), `shard of ${id} over ${shards}`);
      }
    }
  });

  for (const perMs of [1, 4096]) {
    it(`when ${perMs} voucher(s) a millisecond are created, then 16 shards get an even share within ±20%`, () => {
      const keys = createKeySpace('sk', 16);
      // 1,000 per shard: ±20% is six standard deviations of an even spread, so a pass is no luck.
      // `id mod 16` would put every id of the one-per-millisecond case on one shard (its low bits
      // are the sequence, 0 for the first id of a millisecond).
      const perShard = 1_000;
      const counts = new Array<number>(16).fill(0);
      for (const id of consecutiveIds(perShard * 16, perMs)) counts[keys.shardOf(id)]! += 1;
      for (const [shard, n] of counts.entries()) assert.ok(Math.abs(n - perShard) <= perShard * 0.2, `shard ${shard}: ${n} of ${perShard} expected`);
    });
  }

  it('puts every key of one voucher segment in its shard\'s slot, and its shard\'s streams too', () => {
    const keys = createKeySpace('sk', 16);
    const [id] = consecutiveIds(1, 1);
    const perSegment = (s?: number) => [
      keys.voucher(id!, s),
      keys.buyers(id!, s),
      keys.idempotency(id!, s),
      keys.released(id!, s),
      keys.waitlist(id!, s),
      keys.waitlistQuantities(id!, s),
      keys.voucherBucket(id!, s),
      keys.userBucket(id!, 9n, s),
    ];
    for (const s of allShards(keys)) {
      const segment = [...perSegment(s), keys.movesOut(id!, s), keys.movesIn(id!, s), keys.inflight(s), keys.orders(s), keys.deadLetters(s)];
      for (const key of segment) assert.equal(hashTag(key), `s${s}`, key);
    }
    const own = `s${keys.shardOf(id!)}`;
    for (const key of [...perSegment(), keys.warmLock(id!), keys.reconcileLock(id!), keys.lastReconcile(id!)]) assert.equal(hashTag(key), own, key);
  });
});
