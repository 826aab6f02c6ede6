// settle-n.lua: after the database decided a batch, acknowledge its entries of ONE shard, clear
// their in-flight records and compensate failed orders once (pipeline/settlement.ts says how).
import type { KeySpace } from '../keys.js';
import type { OrderRef } from '../records.js';
import { type ScriptCalls, scriptCall } from './loader.js';

export interface SettleInput extends OrderRef {
  /** Give the unit back to Redis stock (the database never took it, but had it). */
  restoreStock: boolean;
  /** Take the units off the buyer's count (the order will never hold them). */
  restoreBuyer: boolean;
  /** Set for an order that failed: the entry is copied to the dead-letter stream. */
  failureReason?: string;
}

export const DEAD_LETTER_MAX_LEN = 100_000;
/** settle-n.lua's flag for an order whose in-flight record this call removed (SETTLED_NOW). */
const SETTLED_NOW = 1;

export interface SettleScripts {
  /**
   * Acknowledges entries of ONE shard and clears their in-flight records, in one round trip.
   * Returns, per entry, true when this call removed the record (and compensated, if asked).
   */
  settle(group: string, shard: number, orders: SettleInput[]): Promise<boolean[]>;
}

export function settleScripts(calls: ScriptCalls, keys: KeySpace): SettleScripts {
  const settle = scriptCall(calls, 'settle');
  return {
    async settle(group, shard, orders) {
      if (orders.length === 0) return [];
      const keyList = [keys.orders(shard), keys.inflight(shard), keys.deadLetters(shard)];
      const voucherIndex = new Map<bigint, number>();
      const args: (string | number)[] = [group, DEAD_LETTER_MAX_LEN];
      for (const o of orders) {
        let index = voucherIndex.get(o.voucherId);
        if (index === undefined) {
          // The stream's shard names the voucher's segment the order was admitted in.
          index = keyList.push(keys.voucher(o.voucherId, shard), keys.buyers(o.voucherId, shard)) - 1; // 1-based index of the voucher key
          voucherIndex.set(o.voucherId, index);
        }
        // One argument per order: a thousand short arguments cost ioredis more than the joining.
        const restore = `${o.restoreStock ? 1 : 0}|${o.restoreBuyer ? 1 : 0}`;
        args.push(`${o.streamId}|${o.orderId}|${o.userId}|${o.quantity}|${restore}|${index}|${o.failureReason ?? ''}`);
      }
      const flags = (await settle(keyList.length, ...keyList, ...args)) as number[];
      return flags.map((f) => f === SETTLED_NOW);
    },
  };
}
