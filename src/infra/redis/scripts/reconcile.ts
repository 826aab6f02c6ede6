// Reconciliation and audit: inspect-3.lua reads the fixed-size part of a voucher segment's state
// atomically (what grows with the sale is walked in steps: consistency/observe.ts); repair-2.lua,
// requeue-2.lua and adopt-3.lua correct what reconciliation confirmed.
import type { KeySpace } from '../keys.js';
import { type InflightOrder, inflightRecord } from '../records.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** A move of units from this segment to another not finished yet (segment-moves.ts). */
export interface Lent {
  moveId: string;
  toShard: number;
  units: number;
  at: Date;
}

/** The part of a voucher segment's Redis state whose size does not grow with the sale, read in one step. */
export interface SegmentHead {
  /** Redis time (µs) when this state was built (warm); repairs apply only to the state they observed. */
  builtAt: string;
  stock: number;
  inflightCounter: number;
  /** Units this segment lent that the receiver may not have yet. */
  lent: Lent[];
  /** Bumped by every move step on this segment: unchanged means no unit moved in or out. */
  moves: number;
  /** The last id the segment's shard stream handed out: an admission after this read gets a greater one. */
  lastStreamId: string;
}

/** Offsets to add (negative: take away). */
export interface Correction {
  stock: number;
  inflightCounter: number;
  buyers: Map<string, number>;
}

export interface ReconcileScripts {
  /** null when the segment (the voucher's own shard by default) has no Redis state. */
  inspect(voucherId: bigint, shard?: number): Promise<SegmentHead | null>;
  /**
   * Adds the offsets to the segment's state built at `builtAt`; false when it was rebuilt since.
   * Buyers' offsets go in calls of REPAIR_STEP buyers (each applied to the observed state or not at all).
   */
  repair(voucherId: bigint, shard: number, builtAt: string, correction: Correction): Promise<boolean>;
  /** Appends a new stream entry for an in-flight order whose entry was lost. */
  requeue(order: InflightOrder): Promise<boolean>;
  /** Gives a not-yet-stored stream entry its lost in-flight record back. */
  adopt(order: InflightOrder): Promise<boolean>;
}

/** Each script answers 1 when it changed something, 0 when it found nothing to change. */
const APPLIED = 1;
/** inspect-3.lua's first value when the segment has no state. */
const ABSENT = 0;
/** Buyers per repair call: the script's work stays under a millisecond however many counts drifted. */
const REPAIR_STEP = 250;

const pairsOf = (flat: string[]) => Array.from({ length: flat.length >> 1 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!] as const);

export function reconcileScripts(calls: ScriptCalls, keys: KeySpace): ReconcileScripts {
  const inspect = scriptCall(calls, 'inspect');
  const repair = scriptCall(calls, 'repair');
  const requeue = scriptCall(calls, 'requeue');
  const adopt = scriptCall(calls, 'adopt');
  const shardKeys = (shard: number) => [keys.inflight(shard), keys.orders(shard)];
  return {
    async inspect(voucherId, shard = keys.shardOf(voucherId)) {
      const [exists, builtAt, stock, inflightCounter, lent, moves, lastStreamId] = (await inspect(
        keys.voucher(voucherId, shard),
        keys.movesOut(voucherId, shard),
        keys.orders(shard),
      )) as [number, string, number, number, string[], number, string];
      if (exists === ABSENT) return null;
      return {
        builtAt,
        stock,
        inflightCounter,
        lent: pairsOf(lent).map(([moveId, record]) => {
          const [toShard, units, ms] = record.split('|').map(Number) as [number, number, number];
          return { moveId, toShard, units, at: new Date(ms) };
        }),
        moves,
        lastStreamId,
      };
    },
    async repair(voucherId, shard, builtAt, { stock, inflightCounter, buyers }) {
      const pairs = [...buyers].flatMap(([user, offset]) => [user, offset]);
      const call = (from: number, stockOffset: number, counterOffset: number) =>
        repair(keys.voucher(voucherId, shard), keys.buyers(voucherId, shard), builtAt, stockOffset, counterOffset, ...pairs.slice(from, from + 2 * REPAIR_STEP));
      if ((await call(0, stock, inflightCounter)) !== APPLIED) return false;
      for (let i = 2 * REPAIR_STEP; i < pairs.length; i += 2 * REPAIR_STEP) if ((await call(i, 0, 0)) !== APPLIED) return false;
      return true;
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
