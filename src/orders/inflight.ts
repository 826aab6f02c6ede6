// In-flight orders: admitted in Redis, not yet stored in the database. The admit script writes
// one record per order into its shard's hash; the order pipeline removes it once stored.
import type { RedisClient } from '../infra/redis/client.js';
import { allShards, type KeySpace } from '../infra/redis/keys.js';
import { type InflightOrder, parseInflight } from '../infra/redis/records.js';

export interface InflightReader {
  /** Looks the order up on every shard (the id does not say which one). */
  find(orderId: bigint): Promise<InflightOrder | null>;
  /** Every in-flight order of one voucher, scanned from its shard (or its segments' shards). */
  ofVoucher(voucherId: bigint, shards?: number[]): Promise<InflightOrder[]>;
}

export function createInflightReader(redis: RedisClient, keys: KeySpace): InflightReader {
  return {
    async find(orderId) {
      const id = orderId.toString();
      const shards = allShards(keys);
      // Auto-pipelining sends these together: one round trip per Redis node.
      const records = await Promise.all(shards.map((s) => redis.hget(keys.inflight(s), id)));
      const shard = records.findIndex((r) => r !== null);
      return shard >= 0 ? parseInflight(id, records[shard]!, shard) : null;
    },
    async ofVoucher(voucherId, shards = [keys.shardOf(voucherId)]) {
      const want = `${voucherId}|`;
      const found: InflightOrder[] = [];
      for (const shard of shards) {
        let cursor = '0';
        do {
          const [next, entries] = await redis.hscan(keys.inflight(shard), cursor, 'COUNT', 1000);
          cursor = next;
          for (let i = 0; i + 1 < entries.length; i += 2) {
            if (entries[i + 1]!.startsWith(want)) found.push(parseInflight(entries[i]!, entries[i + 1]!, shard));
          }
        } while (cursor !== '0');
      }
      return found;
    },
  };
}
