// Reconciliation and audit: inspect-3.lua reads the fixed-size part of a voucher segment's state
// atomically (what grows with the sale is walked in steps: consistency/observe.ts); repair-2.lua,
// redeliver-2.lua and adopt-3.lua correct what reconciliation confirmed, restore-3.lua what the
// database lost (consistency/lost-orders.ts) (answers: lua/lib/reconcile.lua).
import type { KeySpace } from '../keys.js';
import { entryRecord, type InflightOrder, inflightRecord, type OrderEntry } from '../records.js';
import { inSteps, pairsOf } from '../walk.js';
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
   * Buyers' offsets go in calls of REDIS_STEP buyers (each applied to the observed state or not at
   * all), so the script's work stays under a millisecond however many counts drifted.
   */
  repair(voucherId: bigint, shard: number, builtAt: string, correction: Correction): Promise<boolean>;
  /** Appends a new stream entry for an in-flight order whose entry was lost. */
  redeliver(order: InflightOrder): Promise<boolean>;
  /** Gives a not-yet-stored stream entry its lost in-flight record back. */
  adopt(order: InflightOrder): Promise<boolean>;
  /** Admits again, as it was, an acknowledged order the database lost; false when it is in flight already. */
  restore(order: OrderEntry): Promise<boolean>;
}

/** repair, redeliver, adopt and restore answer SK_APPLIED when they changed something (lib/reconcile.lua). */
const APPLIED = 1;
/** inspect-3.lua's first value when the segment has no state (SK_ABSENT). */
const ABSENT = 0;

export function reconcileScripts(calls: ScriptCalls, keys: KeySpace): ReconcileScripts {
  const inspect = scriptCall(calls, 'inspect');
  const repair = scriptCall(calls, 'repair');
  const redeliver = scriptCall(calls, 'redeliver');
  const adopt = scriptCall(calls, 'adopt');
  const restore = scriptCall(calls, 'restore');
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
        lent: [...pairsOf(lent)].map(([moveId, record]) => {
          const [toShard, units, ms] = record.split('|').map(Number) as [number, number, number];
          return { moveId, toShard, units, at: new Date(ms) };
        }),
        moves,
        lastStreamId,
      };
    },
    async repair(voucherId, shard, builtAt, { stock, inflightCounter, buyers }) {
      const call = async (step: [string, number][], stockOffset: number, counterOffset: number) =>
        (await repair(keys.voucher(voucherId, shard), keys.buyers(voucherId, shard), builtAt, stockOffset, counterOffset, ...step.flat())) === APPLIED;
      // The stock and counter offsets go with the first call (one with no buyers when none drifted).
      const steps = [...inSteps([...buyers])];
      if (!(await call(steps[0] ?? [], stock, inflightCounter))) return false;
      for (const step of steps.slice(1)) if (!(await call(step, 0, 0))) return false;
      return true;
    },
    async redeliver(order) {
      return (await redeliver(...shardKeys(order.shard), order.orderId, inflightRecord(order))) === APPLIED;
    },
    async adopt(order) {
      const voucherKey = keys.voucher(BigInt(order.voucherId), order.shard);
      return (await adopt(...shardKeys(order.shard), voucherKey, order.orderId, order.streamId, inflightRecord(order))) === APPLIED;
    },
    async restore(order) {
      const voucherKey = keys.voucher(order.voucherId, order.shard);
      const record = entryRecord(order);
      return (await restore(...shardKeys(order.shard), voucherKey, order.orderId, record.order, record.mark, record.key, order.traceParent ?? '')) === APPLIED;
    },
  };
}
