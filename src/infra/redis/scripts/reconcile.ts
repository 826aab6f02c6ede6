// Reconciliation and audit: inspect-4.lua reads a voucher's state atomically; repair-2.lua,
// requeue-2.lua and adopt-3.lua correct what reconciliation confirmed.
import type { KeySpace } from '../keys.js';
import { type InflightOrder, inflightRecord, parseInflight } from '../records.js';
import { type ScriptCalls, scriptCall } from './loader.js';

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

/** Each script answers 1 when it changed something, 0 when it found nothing to change. */
const APPLIED = 1;
/** inspect-4.lua's first value when the voucher has no state. */
const ABSENT = 0;

export function reconcileScripts(calls: ScriptCalls, keys: KeySpace): ReconcileScripts {
  const inspect = scriptCall(calls, 'inspect');
  const repair = scriptCall(calls, 'repair');
  const requeue = scriptCall(calls, 'requeue');
  const adopt = scriptCall(calls, 'adopt');
  const shardKeys = (voucherId: bigint) => [keys.inflight(keys.shardOf(voucherId)), keys.orders(keys.shardOf(voucherId))];
  return {
    async inspect(voucherId) {
      const [exists, gen, stock, inflightCounter, buyers, released, inflight] = (await inspect(
        keys.voucher(voucherId),
        keys.buyers(voucherId),
        keys.released(voucherId),
        keys.inflight(keys.shardOf(voucherId)),
        voucherId.toString(),
      )) as [number, string, number, number, string[], string[], string[]];
      if (exists === ABSENT) return null;
      const counts = new Map<string, number>();
      for (let i = 0; i + 1 < buyers.length; i += 2) counts.set(buyers[i]!, Number(buyers[i + 1]));
      const orders: InflightOrder[] = [];
      for (let i = 0; i + 1 < inflight.length; i += 2) orders.push(parseInflight(inflight[i]!, inflight[i + 1]!));
      return { gen, stock, inflightCounter, buyers: counts, released: new Set(released), inflight: orders };
    },
    async repair(voucherId, gen, { stock, inflightCounter, buyers }) {
      const pairs = [...buyers].flatMap(([user, offset]) => [user, offset]);
      return (await repair(keys.voucher(voucherId), keys.buyers(voucherId), gen, stock, inflightCounter, ...pairs)) === APPLIED;
    },
    async requeue(order) {
      return (await requeue(...shardKeys(BigInt(order.voucherId)), order.orderId, inflightRecord(order))) === APPLIED;
    },
    async adopt(order) {
      const voucherId = BigInt(order.voucherId);
      return (await adopt(...shardKeys(voucherId), keys.voucher(voucherId), order.orderId, order.streamId, inflightRecord(order))) === APPLIED;
    },
  };
}
