// What every feature receives: one server, a Sentinel-managed master, or a cluster, with the same
// commands (client.ts makes it). The few places that must know which ask isCluster.
import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from './keys.js';

export type RedisClient = Redis | Cluster;

export const isCluster = (redis: RedisClient): redis is Cluster => (redis as Cluster).isCluster === true;

/**
 * On a cluster, the master (host:port) that serves each shard's slot now; undefined on one server
 * or a Sentinel master, where every shard is on the same one.
 */
export async function shardMasters(redis: RedisClient, keys: Pick<KeySpace, 'orders' | 'shards'>): Promise<((shard: number) => string) | undefined> {
  if (!isCluster(redis)) return undefined;
  const ranges = (await redis.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
  const shards = Array.from({ length: keys.shards }, (_, s) => s);
  const slots = await Promise.all(shards.map((s) => redis.cluster('KEYSLOT', keys.orders(s)) as Promise<number>));
  const masters = slots.map((slot) => {
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    return range ? `${range[2][0]}:${range[2][1]}` : 'unassigned';
  });
  return (shard) => masters[shard]!;
}
