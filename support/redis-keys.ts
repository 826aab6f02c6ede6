// The keys of a prefix, on one Redis or every master of a cluster: listed (a store's snapshot) or
// deleted (a test's or a bench's data when it ends), walked by SCAN so a large keyspace is not held up.
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../src/infra/redis/client.js';
import { cursorWalk } from '../src/infra/redis/walk.js';

const mastersOf = (redis: RedisClient): Redis[] => (isCluster(redis) ? redis.nodes('master') : [redis]);

/** Each SCAN step's keys matching `pattern`, node by node. */
async function* scanSteps(redis: RedisClient, pattern: string): AsyncGenerator<{ node: Redis; keys: string[] }> {
  for (const node of mastersOf(redis)) {
    for await (const { elements } of cursorWalk((cursor, count) => node.scan(cursor, 'MATCH', pattern, 'COUNT', count))) yield { node, keys: elements };
  }
}

/** Every key matching `pattern` (a key may be listed twice while the keyspace is resized). */
export async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for await (const { keys } of scanSteps(redis, pattern)) found.push(...keys);
  return found;
}

/** Deletes the keys matching `pattern`; on a cluster one key per command (no CROSSSLOT). */
export async function deleteKeys(redis: RedisClient, pattern: string): Promise<void> {
  const cluster = isCluster(redis);
  for await (const { node, keys } of scanSteps(redis, pattern)) {
    if (keys.length === 0) continue;
    // UNLINK: a big hash is freed in the background, the keys are gone at once all the same.
    if (cluster) await Promise.all(keys.map((key) => node.unlink(key)));
    else await node.unlink(...keys);
  }
}
