// A voucher's Redis state: warm-3.lua creates it (never over live state), restock-8.lua gives a
// released order's units back once and promotes the waitlist's head for them.
import type { KeySpace } from '../keys.js';
import { admissionKeys } from './admission.js';
import { type ScriptCalls, scriptCall } from './loader.js';

export interface WarmInput {
  voucherId: bigint;
  /** The segment's shard; the voucher's own when absent. */
  shard?: number;
  stock: number;
  beginMs: number;
  endMs: number;
  perUserLimit: number;
  inflight: number;
  expireAtSeconds: number;
  /** Most users on the waitlist; 0 when the voucher has none. */
  waitlistCap: number;
}

/** warm-3.lua's answer, named as there. */
const WarmCode = { CREATED: 1, EXISTED: 0 } as const;

export interface RestockInput {
  voucherId: bigint;
  /** The segment's shard (the buyer's home segment); the voucher's own when absent. */
  shard?: number;
  /** The released order, its buyer and its units; orderId "" to promote waiting users only. */
  orderId: string;
  userId: string;
  quantity: number;
  /** Fresh order ids for waitlist promotions; each promotion uses one. */
  promotionIds: bigint[];
  /** A queue voucher: each promotion is also recorded as its place's admission. */
  queue?: boolean;
  /** The traceparent the promotions' stream entries carry (their orders join that trace). */
  traceParent?: string;
}

export interface Promotion {
  orderId: string;
  userId: string;
  quantity: number;
}

/** restock-8.lua's first value, named as there. */
const RestockCode = { RESTOCKED: 0, GIVEN_BACK_BEFORE: 1, MISSING: 2, UNVERIFIED: 3 } as const;

export type RestockResult =
  /** `unverified`: nobody was promoted, the state is not verified on this master (its verification promotes). */
  | { kind: 'restocked'; promotions: Promotion[]; unverified?: true }
  /** Given back before (the order is marked in the released hash). */
  | { kind: 'already' }
  /** The voucher's state is missing: warm it (warming marks the database's releases as given back). */
  | { kind: 'missing' };

export interface VoucherStateScripts {
  /** true when created, false when the voucher's state already existed. */
  warm(input: WarmInput): Promise<boolean>;
  /** Gives a released order's units back once, then promotes waiting users for them. */
  restock(input: RestockInput): Promise<RestockResult>;
}

export function voucherStateScripts(calls: ScriptCalls, keys: KeySpace): VoucherStateScripts {
  const warm = scriptCall(calls, 'warm');
  const restock = scriptCall(calls, 'restock');
  return {
    async warm(w) {
      const code = await warm(
        keys.voucher(w.voucherId, w.shard),
        keys.buyers(w.voucherId, w.shard),
        keys.released(w.voucherId, w.shard),
        w.stock,
        w.beginMs,
        w.endMs,
        w.perUserLimit,
        w.inflight,
        w.expireAtSeconds,
        w.waitlistCap,
      );
      return code === WarmCode.CREATED;
    },
    async restock({ voucherId, shard = keys.shardOf(voucherId), orderId, userId, quantity, promotionIds, queue = false, traceParent = '' }) {
      const reply = (await restock(
        ...admissionKeys(keys, voucherId, shard),
        keys.released(voucherId, shard),
        keys.queueAdmitted(voucherId, shard),
        voucherId.toString(),
        orderId,
        userId,
        quantity,
        queue ? 1 : 0,
        traceParent,
        ...promotionIds.map(String),
      )) as (number | string)[];
      if (reply[0] === RestockCode.GIVEN_BACK_BEFORE) return { kind: 'already' };
      if (reply[0] === RestockCode.MISSING) return { kind: 'missing' };
      if (reply[0] === RestockCode.UNVERIFIED) return { kind: 'restocked', promotions: [], unverified: true };
      // After the code, three values per promotion: orderId, userId, quantity.
      const promotions: Promotion[] = [];
      for (let i = 1; i + 2 < reply.length; i += 3) {
        promotions.push({ orderId: String(reply[i]), userId: String(reply[i + 1]), quantity: Number(reply[i + 2]) });
      }
      return { kind: 'restocked', promotions };
    },
  };
}
