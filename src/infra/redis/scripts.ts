// Typed wrappers of the Lua scripts in ./lua. Each file is `name-<numKeys>.lua`; ioredis'
// defineCommand sends EVALSHA and falls back to EVAL when the server answers NOSCRIPT
// (script cache flushed, failover to a replica that never saw the script).
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { KeySpace } from './keys.js';

const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));

type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

/** Registers every script of ./lua on the connection (idempotent per connection). */
function defineAll(redis: Redis): Record<string, ScriptCall> {
  const calls: Record<string, ScriptCall> = {};
  for (const file of readdirSync(LUA_DIR)) {
    const match = /^([a-z]+)-(\d+)\.lua$/.exec(file);
    if (!match) continue;
    const [, name, keys] = match as unknown as [string, string, string];
    const command = `sk_${name}`;
    if (!(command in redis)) {
      redis.defineCommand(command, { numberOfKeys: Number(keys), lua: readFileSync(LUA_DIR + file, 'utf8') });
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
} as const;
export type AdmitCode = (typeof AdmitCode)[keyof typeof AdmitCode];

export interface AdmitInput {
  voucherId: bigint;
  userId: bigint;
  orderId: bigint;
  quantity: number;
  idempotencyKey?: string;
}

export interface AdmitResult {
  code: AdmitCode;
  /** The new order id (ADMITTED) or the earlier one (REPLAYED, KEY_REUSED). */
  orderId: string;
  quantity: number;
}

export interface WarmInput {
  voucherId: bigint;
  stock: number;
  beginMs: number;
  endMs: number;
  perUserLimit: number;
  inflight: number;
  expireAtSeconds: number;
}

/** One admitted order as its stream entry names it. */
export interface OrderRef {
  shard: number;
  streamId: string;
  orderId: string;
  voucherId: bigint;
  userId: string;
  quantity: number;
}

export interface SettleInput extends OrderRef {
  group: string;
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
  /** true when created, false when the voucher's state already existed. */
  warm(input: WarmInput): Promise<boolean>;
  /** High-water timestamp to start from, or -1 when another owner holds the lease. */
  lease(workerId: number, owner: string, ttlMs: number, issuedMs: number): Promise<number>;
  release(workerId: number, owner: string, issuedMs: number): Promise<boolean>;
  /** Acknowledges an entry and clears its in-flight record; true when this call compensated. */
  settle(input: SettleInput): Promise<boolean>;
}

export function createScripts(redis: Redis, keys: KeySpace): Scripts {
  const call = defineAll(redis);
  return {
    async admit({ voucherId, userId, orderId, quantity, idempotencyKey }) {
      const shard = keys.shardOf(voucherId);
      const [code, id, q] = (await call.admit!(
        keys.voucher(voucherId),
        keys.buyers(voucherId),
        keys.idempotency(voucherId),
        keys.inflight(shard),
        keys.orders(shard),
        voucherId.toString(),
        userId.toString(),
        orderId.toString(),
        quantity,
        idempotencyKey ?? '',
      )) as [number, string, number];
      return { code: code as AdmitCode, orderId: id, quantity: q };
    },
    async warm(w) {
      const created = await call.warm!(
        keys.voucher(w.voucherId),
        keys.buyers(w.voucherId),
        w.stock,
        w.beginMs,
        w.endMs,
        w.perUserLimit,
        w.inflight,
        w.expireAtSeconds,
      );
      return created === 1;
    },
    async lease(workerId, owner, ttlMs, issuedMs) {
      return Number(await call.lease!(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, ttlMs, issuedMs));
    },
    async release(workerId, owner, issuedMs) {
      return (await call.release!(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, issuedMs)) === 1;
    },
    async settle(s) {
      const settled = await call.settle!(
        keys.orders(s.shard),
        keys.inflight(s.shard),
        keys.voucher(s.voucherId),
        keys.buyers(s.voucherId),
        keys.deadLetters(s.shard),
        s.group,
        s.streamId,
        s.orderId,
        s.userId,
        s.quantity,
        s.restoreStock ? 1 : 0,
        s.restoreBuyer ? 1 : 0,
        s.failureReason ?? '',
        DEAD_LETTER_MAX_LEN,
      );
      return settled === 1;
    },
  };
}
