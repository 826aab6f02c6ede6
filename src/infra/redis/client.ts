// What every feature receives: one server, a Sentinel-managed master, or a cluster, with the same
// commands (client.ts makes it). The few places that must know which ask isCluster.
import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from './keys.js';

export type RedisClient = Redis | Cluster;

export const isCluster = (redis: RedisClient): redis is Cluster => (redis as Cluster).isCluster === true;

/** The hash slot of a shard's keys (every key of a shard carries its hash tag). */
export const slotOfShard = (keys: Pick<KeySpace, 'orders'>, shard: number): number => calculateSlot(keys.orders(shard));

/**
 * On a cluster, the master (host:port) that serves each shard's slot now, from the client's slot
 * map; undefined on one server or a Sentinel master, where every shard is on the same one.
 */
export function shardMasters(redis: RedisClient, keys: Pick<KeySpace, 'orders'>): ((shard: number) => string) | undefined {
  if (!isCluster(redis)) return undefined;
  return (shard) => redis.slots[slotOfShard(keys, shard)]?.[0] ?? 'unassigned';
}
