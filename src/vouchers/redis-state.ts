// A seckill voucher's state in Redis (stock, window, limit, buyers), per segment (segments.ts):
// written when the voucher is created and rebuilt from the database when it is missing (Redis
// restarted, keys expired, a master lost its data).
//
// Rebuilding never hands out a unit the database has sold: the in-flight orders are read BEFORE
// the database, so an order stored in between is subtracted twice (Redis grants too little, which
// reconciliation repairs) and never zero times (which would oversell). No admission can happen
// in a segment while its hash is absent, and the hash is created last, only if still absent.
// When every segment is gone the stock is rebuilt exactly and split again; when only some are,
// the others keep selling and moving units meanwhile, so the lost ones come back empty and
// reconciliation (which sees every segment and every move) gives them what the database implies.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../infra/redis/client.js';
import { AppError } from '../errors.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { WarmInput } from '../infra/redis/scripts/voucher-state.js';
import { inSteps } from '../infra/redis/walk.js';
import type { InflightOrder } from '../infra/redis/records.js';
import type { VoucherRepository } from './repository.js';
import type { Voucher } from './voucher.js';
import { kindOf } from './kinds.js';

import { homeShard, segmentShards, splitStock } from './segments.js';

/** Redis state outlives the sale window by this much (late payments, expiries, audits). */
export const RETAIN_AFTER_END_MS = 7 * 24 * 3600 * 1000;
const WARM_LOCK_MS = 10_000;

export interface VoucherRedisState {
  /** Writes the state of a voucher that was just created. */
  create(v: Voucher): Promise<void>;
  /** Rebuilds the state from the database if it is missing. Returns true when it rebuilt it. */
  rewarm(v: Voucher): Promise<boolean>;
  /** Units Redis can still grant (every segment), or null when a segment's state is missing. */
  available(v: Voucher): Promise<number | null>;
}

export interface VoucherRedisStateDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  vouchers: VoucherRepository;
  /** The voucher's orders in flight (orders/inflight.ts reads them). */
  inflight: { ofVoucher(voucherId: bigint, shards?: number[]): Promise<InflightOrder[]> };
  /** Capacity of a voucher's waitlist (WAITLIST_MAX). */
  waitlistMax: number;
}

export function createVoucherRedisState(deps: VoucherRedisStateDeps): VoucherRedisState {
  return {
    create: (v) => create(deps, v),
    rewarm: (v) => rewarm(deps, v),
    available: (v) => available(deps, v),
  };
}

function warmInput(v: Voucher, shard: number, stock: number, inflightOrders: number, waitlistMax: number): WarmInput {
  return {
    voucherId: v.id,
    shard,
    stock,
    beginMs: v.beginAt.getTime(),
    endMs: v.endAt.getTime(),
    perUserLimit: v.perUserLimit,
    inflight: inflightOrders,
    expireAtSeconds: Math.ceil((v.endAt.getTime() + RETAIN_AFTER_END_MS) / 1000),
    // A queue's waiting places are its waitlist (queue/): promoted like one, never enrolled by a claim.
    waitlistCap: kindOf(v).waitlist && (v.waitlist || v.queue) ? waitlistMax : 0,
  };
}

async function create({ keys, scripts, waitlistMax }: VoucherRedisStateDeps, v: Voucher): Promise<void> {
  const shards = segmentShards(v, keys);
  const stocks = splitStock(v.stock, shards.length);
  await Promise.all(shards.map((shard, i) => scripts.warm(warmInput(v, shard, stocks[i]!, 0, waitlistMax))));
}

async function rewarm(deps: VoucherRedisStateDeps, v: Voucher): Promise<boolean> {
  const { redis, keys } = deps;
  if ((await missingSegments(deps, v)).length === 0) return false;
  const lockKey = keys.warmLock(v.id);
  const token = `${process.pid}:${Math.random()}`;
  if ((await redis.set(lockKey, token, 'PX', WARM_LOCK_MS, 'NX')) !== 'OK') {
    // Another instance is rebuilding: wait for it rather than race it.
    for (let waited = 0; waited < WARM_LOCK_MS; waited += 50) {
      await sleep(50);
      if ((await missingSegments(deps, v)).length === 0) return false;
    }
    throw new AppError('UNAVAILABLE', 'voucher state is being rebuilt; retry shortly');
  }
  try {
    return await rebuild(deps, v);
  } finally {
    if ((await redis.get(lockKey)) === token) await redis.del(lockKey);
  }
}

async function available({ redis, keys }: VoucherRedisStateDeps, v: Voucher): Promise<number | null> {
  const stocks = await Promise.all(segmentShards(v, keys).map((s) => redis.hget(keys.voucher(v.id, s), 'stock')));
  return stocks.includes(null) ? null : stocks.reduce((sum, s) => sum + Math.max(0, Number(s)), 0);
}

/** Replaces the hash at `key` with `entries`, REDIS_STEP fields per HSET: each command stays short (0.1 ms) however many buyers are rebuilt. */
async function fill(redis: RedisClient, key: string, entries: [string, number][]) {
  // UNLINK frees a big leftover hash in the background; DEL would free it before answering.
  await redis.unlink(key);
  for (const step of inSteps(entries)) await redis.hset(key, Object.fromEntries(step));
}

/** The shards of the voucher's segments whose state is missing. */
async function missingSegments({ redis, keys }: VoucherRedisStateDeps, v: Voucher): Promise<number[]> {
  const shards = segmentShards(v, keys);
  const present = await Promise.all(shards.map((s) => redis.exists(keys.voucher(v.id, s))));
  return shards.filter((_, i) => present[i] === 0);
}

async function rebuild(deps: VoucherRedisStateDeps, v: Voucher): Promise<boolean> {
  const { redis, keys, scripts, vouchers, inflight, waitlistMax } = deps;
  const shards = segmentShards(v, keys);
  const pending = await inflight.ofVoucher(v.id, shards); // first: see the module comment
  const snapshot = await vouchers.warmSnapshot(v.id);
  if (!snapshot) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${v.id} not found`);
  const { voucher: fresh, held, released } = snapshot;
  const missing = await missingSegments(deps, v);
  if (missing.length === 0) return false;
  const pendingUnits = pending.reduce((sum, o) => sum + o.quantity, 0);
  const stocks = missing.length === shards.length ? splitStock(Math.max(0, fresh.stock - pendingUnits), shards.length) : shards.map(() => 0);
  const home = (user: string) => homeShard(v, user, keys);
  let created = false;
  for (const shard of missing) {
    const mine = pending.filter((o) => o.shard === shard);
    const counts = new Map([...held].filter(([user]) => home(user) === shard));
    for (const o of mine) counts.set(o.userId, (counts.get(o.userId) ?? 0) + o.quantity);
    await fill(redis, keys.buyers(v.id, shard), [...counts.entries()]);
    // Units the database already has back: the release relay must not give them back again.
    await fill(redis, keys.released(v.id, shard), released.filter((r) => home(r.userId) === shard).map((r) => [r.orderId, 1]));
    if (await scripts.warm(warmInput(fresh, shard, stocks[shards.indexOf(shard)]!, mine.length, waitlistMax))) created = true;
  }
  return created;
}
