// Stock segments: a hot seckill voucher's stock split over K parts on K shards, so that K Redis
// masters share one sale (`segments: K` at creation). Each segment is a whole voucher state of its
// own (stock, buyers, idempotency records, waitlist) under its shard's hash tag, so every script
// still touches one slot. A buyer always claims in their home segment (a hash of the user id), so
// the per-user limit and Idempotency-Key stay exact; a home segment that runs short borrows units
// from another (segment-moves.ts). A voucher of one segment is the special case K = 1 on the id's
// own shard, which is where every voucher created before segments lives.
import { type KeySpace, mix } from '../infra/redis/keys.js';
import { type RedisClient, shardMasters } from '../infra/redis/client.js';
import type { Voucher } from './voucher.js';

export const MAX_SEGMENTS = 64;

/** The shards of a voucher's segments; the first is always the id's own shard. */
export function segmentShards(v: Pick<Voucher, 'id' | 'segmentShards'>, keys: KeySpace): number[] {
  return v.segmentShards ?? [keys.shardOf(v.id)];
}

/** The shard of the segment where `userId` claims `v` (their count and records live there). */
export function homeShard(v: Pick<Voucher, 'id' | 'segmentShards'>, userId: bigint | string, keys: KeySpace): number {
  const shards = segmentShards(v, keys);
  return shards.length === 1 ? shards[0]! : shards[mix(BigInt(userId)) % shards.length]!;
}

/** Units of a new voucher per segment: an even split, the remainder to the first ones. */
export function splitStock(stock: number, segments: number): number[] {
  return Array.from({ length: segments }, (_, i) => Math.floor(stock / segments) + (i < stock % segments ? 1 : 0));
}

/**
 * K distinct shards for a new voucher's segments, starting with the id's own. With `masterOf`
 * (a cluster: the master serving each shard now), one shard per master in turn, so K segments
 * reach min(K, masters) masters; otherwise spread evenly over the shard numbers. Chosen once and
 * stored with the voucher: a later resharding moves slots, never the keys out of their slots.
 */
export function chooseSegmentShards(voucherId: bigint, segments: number, keys: KeySpace, masterOf?: (shard: number) => string): number[] {
  const first = keys.shardOf(voucherId);
  if (segments === 1) return [first];
  if (segments > keys.shards) throw new RangeError(`${segments} segments need as many shards; SHARDS is ${keys.shards}`);
  // Every shard, in the order this voucher tries them: from its own shard on, round the ring.
  const ring = Array.from({ length: keys.shards }, (_, i) => (first + i) % keys.shards);
  if (!masterOf) return Array.from({ length: segments }, (_, j) => ring[Math.floor((j * keys.shards) / segments)]!);
  const byMaster = new Map<string, number[]>();
  for (const shard of ring) {
    const master = masterOf(shard);
    byMaster.set(master, [...(byMaster.get(master) ?? []), shard]);
  }
  // The id's own master first, then the others; one shard from each in turn.
  const queues = [...byMaster.values()];
  const chosen: number[] = [];
  for (let round = 0; chosen.length < segments; round++) {
    for (const queue of queues) if (queue[round] !== undefined && chosen.length < segments) chosen.push(queue[round]!);
  }
  return chosen;
}

/** Chooses a new voucher's segment shards: null for one segment (it lives on its id's shard). */
export type SegmentPlacer = (voucherId: bigint, segments: number) => Promise<number[] | null>;

export function segmentPlacer(redis: RedisClient, keys: KeySpace): SegmentPlacer {
  return async (voucherId, segments) => (segments === 1 ? null : chooseSegmentShards(voucherId, segments, keys, shardMasters(redis, keys)));
}
