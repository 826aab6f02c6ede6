// Typed wrappers of the reconciliation scripts (inspect, repair, requeue, adopt in ../infra/redis/lua).
import type { Redis } from 'ioredis';
import type { KeySpace } from '../infra/redis/keys.js';
import { defineAll } from '../infra/redis/scripts.js';
import { type InflightOrder, inflightRecord, parseInflight } from '../infra/redis/records.js';

/** A voucher's Redis state read in one atomic step. */
export interface RedisState {
  /** When this state was built (warm); repairs apply only to the state they observed. */
  gen: string;
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
  /** Orders whose release the restock script has applied. */
  released: Set<string>;
  /** The voucher's in-flight records. */
  inflight: InflightOrder[];
}

/** Offsets to add (negative: take away). */
export interface Correction {
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
}

export interface ReconcileScripts {
  /** null when the voucher has no Redis state. */
  inspect(voucherId: bigint): Promise<RedisState | null>;
  /** Adds the offsets to the state built at `gen`; false when it was rebuilt since. */
  repair(voucherId: bigint, gen: string, correction: Correction): Promise<boolean>;
  /** Appends a new stream entry for an in-flight order whose entry was lost. */
  requeue(order: InflightOrder): Promise<boolean>;
  /** Gives a not-yet-stored stream entry its lost in-flight record back. */
  adopt(order: InflightOrder): Promise<boolean>;
}

export function createReconcileScripts(redis: Redis, keys: KeySpace): ReconcileScripts {
  const call = defineAll(redis);
  const shardKeys = (voucherId: bigint) => [keys.inflight(keys.shardOf(voucherId)), keys.orders(keys.shardOf(voucherId))];
  return {
    async inspect(voucherId) {
      const [exists, gen, stock, inflightCounter, buyers, released, inflight] = (await call.inspect!(
        keys.voucher(voucherId),
        keys.buyers(voucherId),
        keys.released(voucherId),
        keys.inflight(keys.shardOf(voucherId)),
        voucherId.toString(),
      )) as [number, string, number, number, string[], string[], string[]];
      if (exists === 0) return null;
      const counts = new Map<string, number>();
      for (let i = 0; i + 1 < buyers.length; i += 2) counts.set(buyers[i]!, Number(buyers[i + 1]));
      const orders: InflightOrder[] = [];
      for (let i = 0; i + 1 < inflight.length; i += 2) orders.push(parseInflight(inflight[i]!, inflight[i + 1]!));
      return { gen, stock, inflightCounter, buyers: counts, released: new Set(released), inflight: orders };
    },
    async repair(voucherId, gen, { stock, inflightCounter, buyers }) {
      const pairs = [...buyers].flatMap(([user, offset]) => [user, offset]);
      return (await call.repair!(keys.voucher(voucherId), keys.buyers(voucherId), gen, stock, inflightCounter, ...pairs)) === 1;
    },
    async requeue(order) {
      return (await call.requeue!(...shardKeys(BigInt(order.voucherId)), order.orderId, inflightRecord(order))) === 1;
    },
    async adopt(order) {
      const voucherId = BigInt(order.voucherId);
      return (await call.adopt!(...shardKeys(voucherId), keys.voucher(voucherId), order.orderId, order.streamId, inflightRecord(order))) === 1;
    },
  };
}
