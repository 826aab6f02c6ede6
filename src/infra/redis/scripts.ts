// Typed wrappers of the Lua scripts in ./lua. Each file is `name-<numKeys>.lua` (`name-n.lua`:
// the number of keys varies and is given per call); a line `--! include lib/x.lua` is replaced by
// that file, so scripts share code without sharing a call. ioredis' defineCommand sends EVALSHA and
// falls back to EVAL when the server answers NOSCRIPT (script cache flushed, failover to a replica
// that never saw the script).
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { KeySpace } from './keys.js';
import type { OrderRef } from './records.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));

export type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/** The ioredis command of the script `name`. */
const commandOf = (name: string) => `sk_${name}`;
/** Script commands whose callers batch already (client.ts leaves them out of auto-pipelining). */
export const SELF_BATCHED_COMMANDS = [commandOf('admit')] as const;

/**
 * Registers every script of ./lua on the connection (idempotent per connection) and returns a
 * call per script name. Typed wrappers live beside their feature (this file, reconcile/).
 */
export function defineAll(redis: Redis): Record<string, ScriptCall> {
  const calls: Record<string, ScriptCall> = {};
  for (const file of readdirSync(LUA_DIR)) {
    const match = /^([a-z]+)-(\d+|n)\.lua$/.exec(file);
    if (!match) continue;
    const [, name, keys] = match as unknown as [string, string, string];
    const command = commandOf(name);
    if (!(command in redis)) {
      const lua = readFileSync(LUA_DIR + file, 'utf8').replace(/^--! include (\S+)$/gm, (_, lib: string) => readFileSync(LUA_DIR + lib, 'utf8'));
      redis.defineCommand(command, keys === 'n' ? { lua } : { numberOfKeys: Number(keys), lua });
    }
    calls[name] = (redis as unknown as Record<string, ScriptCall>)[command]!.bind(redis);
  }
  return calls;
}

export const AdmitCode = {
  ADMITTED: 0,
  REPLAYED: 1,
  MISSING: 2,
  NOT_STARTED: 3,
  ENDED: 4,
  LIMIT_EXCEEDED: 5,
  SOLD_OUT: 6,
  KEY_REUSED: 7,
  RATE_LIMITED: 8,
} as const;
export type AdmitCode = (typeof AdmitCode)[keyof typeof AdmitCode];

/** A token bucket: `rate` tokens per second (0: off), at most `burst` saved up. */
export interface BucketLimit {
  rate: number;
  burst: number;
}

/** The buckets every claim takes a token from: the voucher's, and the buyer's for that voucher. */
export interface ClaimRateLimits {
  voucher: BucketLimit;
  user: BucketLimit;
}

export const NO_RATE_LIMITS: ClaimRateLimits = { voucher: { rate: 0, burst: 0 }, user: { rate: 0, burst: 0 } };

/** One buyer's claim on a voucher, with the id its order gets if admitted. */
export interface AdmitClaim {
  userId: bigint;
  orderId: bigint;
  quantity: number;
  idempotencyKey?: string;
}

export interface AdmitInput extends AdmitClaim {
  voucherId: bigint;
  /** Token buckets taken before any other check; none when absent. */
  limits?: ClaimRateLimits;
}

/** Most claims in one admit call: it runs in Redis for ~15 µs per claim and nothing else runs meanwhile. */
export const MAX_ADMIT_BATCH = 64;

export interface AdmitResult {
  code: AdmitCode;
  /** The new order id (ADMITTED) or the earlier one (REPLAYED, KEY_REUSED). */
  orderId: string;
  quantity: number;
  /** SOLD_OUT only: the user is on the voucher's waitlist. */
  waitlisted: boolean;
  /**
   * SOLD_OUT only, when no unit is left for anyone and no place on the waitlist either: the
   * version of the users who may hear something else (see snapshot-3.lua).
   */
  closedAtVersion?: string;
  /** RATE_LIMITED only: ms until the buckets have a token again. */
  retryAfterMs?: number;
}

/** Who, on a sold-out voucher, may get another answer than a plain SOLD_OUT (snapshot-3.lua). */
export type SoldOutSnapshot =
  | { version: string; tooLarge: false; keyedUsers: string[]; waitingUsers: string[] }
  | { version: string; tooLarge: true };

export interface WarmInput {
  voucherId: bigint;
  stock: number;
  beginMs: number;
  endMs: number;
  perUserLimit: number;
  inflight: number;
  expireAtSeconds: number;
  /** Most users on the waitlist; 0 when the voucher has none. */
  waitlistCap: number;
}

export interface RestockInput {
  voucherId: bigint;
  /** The released order, its buyer and its units. */
  orderId: string;
  userId: string;
  quantity: number;
  /** Fresh order ids for waitlist promotions; each promotion uses one. */
  promotionIds: bigint[];
}

export interface Promotion {
  orderId: string;
  userId: string;
  quantity: number;
}

export type RestockResult =
  | { kind: 'restocked'; promotions: Promotion[] }
  /** Given back before (the order is marked in the released hash). */
  | { kind: 'already' }
  /** The voucher's state is missing: warm it (warming marks the database's releases as given back). */
  | { kind: 'missing' };

export interface SettleInput extends OrderRef {
  /** Give the unit back to Redis stock (the database never took it, but had it). */
  restoreStock: boolean;
  /** Take the units off the buyer's count (the order will never hold them). */
  restoreBuyer: boolean;
  /** Set for an order that failed: the entry is copied to the dead-letter stream. */
  failureReason?: string;
}

export const DEAD_LETTER_MAX_LEN = 100_000;

export interface Scripts {
  admit(input: AdmitInput): Promise<AdmitResult>;
  /**
   * Claims on one voucher (at most MAX_ADMIT_BATCH) in one atomic call, decided in order as if one
   * after the other: a result per claim.
   */
  admitMany(voucherId: bigint, claims: AdmitClaim[], limits?: ClaimRateLimits): Promise<AdmitResult[]>;
  /** Takes a token from a claim's voucher and user buckets: 0, or the ms to wait (nothing taken). */
  takeTokens(voucherId: bigint, userId: bigint, limits: ClaimRateLimits): Promise<number>;
  /** Users with idempotency records and waiting users of a voucher, unless more than `max`. */
  soldOutSnapshot(voucherId: bigint, max: number): Promise<SoldOutSnapshot>;
  /** true when created, false when the voucher's state already existed. */
  warm(input: WarmInput): Promise<boolean>;
  /** Gives a released order's units back once, then promotes waiting users for them. */
  restock(input: RestockInput): Promise<RestockResult>;
  /** High-water timestamp to start from, or -1 when another owner holds the lease. */
  lease(workerId: number, owner: string, ttlMs: number, issuedMs: number): Promise<number>;
  release(workerId: number, owner: string, issuedMs: number): Promise<boolean>;
  /**
   * Acknowledges entries of ONE shard and clears their in-flight records, in one round trip.
   * Returns, per entry, true when this call removed the record (and compensated, if asked).
   */
  settle(group: string, shard: number, orders: SettleInput[]): Promise<boolean[]>;
}

const ADMIT_KEYS_CACHED = 10_000;

const limitArgs = ({ voucher, user }: ClaimRateLimits) => [voucher.rate, voucher.burst, user.rate, user.burst];

/** Claim `at`'s result in admit-n.lua's answer (six values per claim). */
function admitResult(flat: (string | number)[], at: number): AdmitResult {
  const code = flat[at] as AdmitCode;
  const orderId = String(flat[at + 1]);
  const quantity = Number(flat[at + 2]);
  if (code === AdmitCode.RATE_LIMITED) return { code, orderId, quantity: 0, waitlisted: false, retryAfterMs: quantity };
  const result: AdmitResult = { code, orderId, quantity, waitlisted: flat[at + 3] === 1 };
  if (flat[at + 4] === 1) result.closedAtVersion = String(flat[at + 5]);
  return result;
}

export function createScripts(redis: Redis, keys: KeySpace): Scripts {
  const call = defineAll(redis);
  // The key names of a hot voucher are built once, not on every claim.
  const admitKeys = new Map<bigint, { keys: string[]; id: string }>();
  const keysForAdmit = (voucherId: bigint) => {
    let k = admitKeys.get(voucherId);
    if (!k) {
      if (admitKeys.size >= ADMIT_KEYS_CACHED) admitKeys.clear();
      const shard = keys.shardOf(voucherId);
      k = {
        keys: [
          keys.voucher(voucherId),
          keys.buyers(voucherId),
          keys.idempotency(voucherId),
          keys.inflight(shard),
          keys.orders(shard),
          keys.waitlist(voucherId),
          keys.waitlistQuantities(voucherId),
          keys.voucherBucket(voucherId),
        ],
        id: voucherId.toString(),
      };
      admitKeys.set(voucherId, k);
    }
    return k;
  };
  const admitMany: Scripts['admitMany'] = async (voucherId, claims, { voucher, user } = NO_RATE_LIMITS) => {
    if (claims.length === 0 || claims.length > MAX_ADMIT_BATCH) throw new RangeError(`1 to ${MAX_ADMIT_BATCH} claims per admit call, got ${claims.length}`);
    const k = keysForAdmit(voucherId);
    // A user bucket's key only while the user bucket is on: otherwise it is most of the call's bytes.
    const userBuckets = user.rate > 0 ? claims.map((c) => keys.userBucket(voucherId, c.userId)) : [];
    const args: (string | number)[] = [k.keys.length + userBuckets.length, ...k.keys, ...userBuckets];
    args.push(k.id, voucher.rate, voucher.burst, user.rate, user.burst);
    for (const c of claims) args.push(c.userId.toString(), c.orderId.toString(), c.quantity, c.idempotencyKey ?? '');
    const flat = (await call.admit!(...args)) as (string | number)[];
    if (flat.length !== claims.length * 6) throw new Error(`admit answered ${flat.length} values for ${claims.length} claim(s)`);
    return claims.map((_, i) => admitResult(flat, i * 6));
  };
  return {
    async admit({ voucherId, limits, ...claim }) {
      return (await admitMany(voucherId, [claim], limits))[0]!;
    },
    admitMany,
    async takeTokens(voucherId, userId, limits) {
      return Number(await call.bucket!(keys.voucherBucket(voucherId), keys.userBucket(voucherId, userId), ...limitArgs(limits)));
    },
    async soldOutSnapshot(voucherId, max) {
      const [version, n, ...users] = (await call.snapshot!(keys.voucher(voucherId), keys.idempotency(voucherId), keys.waitlist(voucherId), max)) as [
        string,
        number,
        ...string[],
      ];
      if (n < 0) return { version, tooLarge: true };
      return { version, tooLarge: false, keyedUsers: users.slice(0, n), waitingUsers: users.slice(n) };
    },
    async warm(w) {
      const created = await call.warm!(
        keys.voucher(w.voucherId),
        keys.buyers(w.voucherId),
        keys.released(w.voucherId),
        w.stock,
        w.beginMs,
        w.endMs,
        w.perUserLimit,
        w.inflight,
        w.expireAtSeconds,
        w.waitlistCap,
      );
      return created === 1;
    },
    async restock({ voucherId, orderId, userId, quantity, promotionIds }) {
      const shard = keys.shardOf(voucherId);
      const reply = (await call.restock!(
        keys.voucher(voucherId),
        keys.buyers(voucherId),
        keys.released(voucherId),
        keys.waitlist(voucherId),
        keys.waitlistQuantities(voucherId),
        keys.inflight(shard),
        keys.orders(shard),
        voucherId.toString(),
        orderId,
        userId,
        quantity,
        ...promotionIds.map(String),
      )) as (number | string)[];
      if (reply[0] === 1) return { kind: 'already' };
      if (reply[0] === 2) return { kind: 'missing' };
      const promotions: Promotion[] = [];
      for (let i = 1; i + 2 < reply.length; i += 3) {
        promotions.push({ orderId: String(reply[i]), userId: String(reply[i + 1]), quantity: Number(reply[i + 2]) });
      }
      return { kind: 'restocked', promotions };
    },
    async lease(workerId, owner, ttlMs, issuedMs) {
      return Number(await call.lease!(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, ttlMs, issuedMs));
    },
    async release(workerId, owner, issuedMs) {
      return (await call.release!(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, issuedMs)) === 1;
    },
    async settle(group, shard, orders) {
      if (orders.length === 0) return [];
      const keyList = [keys.orders(shard), keys.inflight(shard), keys.deadLetters(shard)];
      const voucherIndex = new Map<bigint, number>();
      const args: (string | number)[] = [group, DEAD_LETTER_MAX_LEN];
      for (const o of orders) {
        let index = voucherIndex.get(o.voucherId);
        if (index === undefined) {
          if (keys.shardOf(o.voucherId) !== shard) throw new Error(`order ${o.orderId} is not on shard ${shard}`);
          index = keyList.push(keys.voucher(o.voucherId), keys.buyers(o.voucherId)) - 1; // 1-based index of the voucher key
          voucherIndex.set(o.voucherId, index);
        }
        // One argument per order: a thousand short arguments cost ioredis more than the joining.
        const restore = `${o.restoreStock ? 1 : 0}|${o.restoreBuyer ? 1 : 0}`;
        args.push(`${o.streamId}|${o.orderId}|${o.userId}|${o.quantity}|${restore}|${index}|${o.failureReason ?? ''}`);
      }
      const flags = (await call.settle!(keyList.length, ...keyList, ...args)) as number[];
      return flags.map((f) => f === 1);
    },
  };
}
