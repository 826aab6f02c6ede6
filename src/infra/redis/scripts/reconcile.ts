// Reconciliation and audit: inspect-6.lua reads a voucher segment's state atomically; repair-2.lua,
// requeue-2.lua and adopt-3.lua correct what reconciliation confirmed.
import type { KeySpace } from '../keys.js';
import { type InflightOrder, inflightRecord, parseInflight } from '../records.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** A move of units from this segment to another not finished yet (segment-moves.ts). */
export interface Lent {
  moveId: string;
  toShard: number;
  units: number;
  at: Date;
}

/** A voucher segment's Redis state read in one atomic step. */
export interface RedisState {
  /** Redis time (µs) when this state was built (warm); repairs apply only to the state they observed. */
  builtAt: string;
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
  /** Orders whose release the restock script has applied. */
  released: Set<string>;
  /** The segment's in-flight records. */
  inflight: InflightOrder[];
  /** Units this segment lent that the receiver may not have yet. */
  lent: Lent[];
  /** Moves this segment received. */
  received: Set<string>;
  /** Bumped by every move step on this segment: unchanged means no unit moved in or out. */
  moves: number;
}

/** Offsets to add (negative: take away). */
export interface Correction {
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
}

export interface ReconcileScripts {
  /** null when the segment (the voucher's own shard by default) has no Redis state. */
  inspect(voucherId: bigint, shard?: number): Promise<RedisState | null>;
  /** Adds the offsets to the segment's state built at `builtAt`; false when it was rebuilt since. */
  repair(voucherId: bigint, shard: number, builtAt: string, correction: Correction): Promise<boolean>;
  /** Appends a new stream entry for an in-flight order whose entry was lost. */
  requeue(order: InflightOrder): Promise<boolean>;
  /** Gives a not-yet-stored stream entry its lost in-flight record back. */
  adopt(order: InflightOrder): Promise<boolean>;
}

/** Each script answers 1 when it changed something, 0 when it found nothing to change. */
const APPLIED = 1;
/** inspect-6.lua's first value when the segment has no state. */
const ABSENT = 0;

const pairsOf = (flat: string[]) => Array.from({ length: flat.length >> 1 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!] as const);

export function reconcileScripts(calls: ScriptCalls, keys: KeySpace): ReconcileScripts {
  const inspect = scriptCall(calls, 'inspect');
  const repair = scriptCall(calls, 'repair');
  const requeue = scriptCall(calls, 'requeue');
  const adopt = scriptCall(calls, 'adopt');
  const shardKeys = (shard: number) => [keys.inflight(shard), keys.orders(shard)];
  return {
    async inspect(voucherId, shard = keys.shardOf(voucherId)) {
      const [exists, builtAt, stock, inflightCounter, buyers, released, inflight, lent, received, moves] = (await inspect(
        keys.voucher(voucherId, shard),
        keys.buyers(voucherId, shard),
        keys.released(voucherId, shard),
        keys.inflight(shard),
        keys.movesOut(voucherId, shard),
        keys.movesIn(voucherId, shard),
        voucherId.toString(),
      )) as [number, string, number, number, string[], string[], string[], string[], string[], number];
      if (exists === ABSENT) return null;
      return {
        builtAt,
        stock,
        inflightCounter,
        buyers: new Map(pairsOf(buyers).map(([user, units]) => [user, Number(units)])),
        released: new Set(released),
        inflight: pairsOf(inflight).map(([orderId, record]) => parseInflight(orderId, record, shard)),
        lent: pairsOf(lent).map(([moveId, record]) => {
          const [toShard, units, ms] = record.split('|').map(Number) as [number, number, number];
          return { moveId, toShard, units, at: new Date(ms) };
        }),
        received: new Set(received),
        moves,
      };
    },
    async repair(voucherId, shard, builtAt, { stock, inflightCounter, buyers }) {
      const pairs = [...buyers].flatMap(([user, offset]) => [user, offset]);
      return (await repair(keys.voucher(voucherId, shard), keys.buyers(voucherId, shard), builtAt, stock, inflightCounter, ...pairs)) === APPLIED;
    },
    async requeue(order) {
      return (await requeue(...shardKeys(order.shard), order.orderId, inflightRecord(order))) === APPLIED;
    },
    async adopt(order) {
      const voucherKey = keys.voucher(BigInt(order.voucherId), order.shard);
      return (await adopt(...shardKeys(order.shard), voucherKey, order.orderId, order.streamId, inflightRecord(order))) === APPLIED;
    },
  };
}
