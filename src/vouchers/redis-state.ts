// A seckill voucher's state in Redis (stock, window, limit, buyers): written when the voucher is
// created and rebuilt from the database when it is missing (Redis restarted, keys expired).
//
// Rebuilding never hands out a unit the database has sold: the in-flight orders are read BEFORE
// the database, so an order stored in between is subtracted twice (Redis grants too little, which
// reconciliation repairs) and never zero times (which would oversell). No admission can happen
// while the voucher hash is absent, and the hash is created last, only if still absent.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../infra/redis/redis-client.js';
import { AppError } from '../errors.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { InflightReader } from '../orders/inflight.js';
import type { VoucherRepository } from './repository.js';
import type { Voucher } from './voucher.js';
import { kindOf } from './kinds.js';

/** Redis state outlives the sale window by this much (late payments, expiries, audits). */
export const RETAIN_AFTER_END_MS = 7 * 24 * 3600 * 1000;
const WARM_LOCK_MS = 10_000;
const CHUNK = 1000;

export interface VoucherRedisState {
  /** Writes the state of a voucher that was just created. */
  create(v: Voucher): Promise<void>;
  /** Rebuilds the state from the database if it is missing. Returns true when it rebuilt it. */
  rewarm(v: Voucher): Promise<boolean>;
  /** Units Redis can still grant, or null when the state is missing. */
  available(voucherId: bigint): Promise<number | null>;
}

export interface VoucherRedisStateDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Scripts;
  vouchers: VoucherRepository;
  inflight: InflightReader;
  /** Capacity of a voucher's waitlist (WAITLIST_MAX). */
  waitlistMax: number;
}

export function createVoucherRedisState({ redis, keys, scripts, vouchers, inflight, waitlistMax }: VoucherRedisStateDeps): VoucherRedisState {
  const expireAtSeconds = (v: Voucher) => Math.ceil((v.endAt.getTime() + RETAIN_AFTER_END_MS) / 1000);
  const warmInput = (v: Voucher, stock: number, inflightOrders: number) => ({
    voucherId: v.id,
    stock,
    beginMs: v.beginAt.getTime(),
    endMs: v.endAt.getTime(),
    perUserLimit: v.perUserLimit,
    inflight: inflightOrders,
    expireAtSeconds: expireAtSeconds(v),
    waitlistCap: kindOf(v).waitlist && v.waitlist ? waitlistMax : 0,
  });

  async function fill(key: string, entries: [string, number][]) {
    await redis.del(key);
    for (let i = 0; i < entries.length; i += CHUNK) {
      await redis.hset(key, Object.fromEntries(entries.slice(i, i + CHUNK)));
    }
  }

  async function rebuild(v: Voucher): Promise<boolean> {
    const pending = await inflight.ofVoucher(v.id); // first: see the module comment
    const snapshot = await vouchers.warmSnapshot(v.id);
    if (!snapshot) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${v.id} not found`);
    const { voucher: fresh, held, released } = snapshot;
    let pendingUnits = 0;
    for (const o of pending) {
      pendingUnits += o.quantity;
      held.set(o.userId, (held.get(o.userId) ?? 0) + o.quantity);
    }
    if ((await redis.exists(keys.voucher(v.id))) === 1) return false;
    await fill(keys.buyers(v.id), [...held.entries()]);
    // Units the database already has back: the release relay must not give them back again.
    await fill(keys.released(v.id), released.map((orderId) => [orderId, 1]));
    return scripts.warm(warmInput(fresh, Math.max(0, fresh.stock - pendingUnits), pending.length));
  }

  return {
    async create(v) {
      await scripts.warm(warmInput(v, v.stock, 0));
    },

    async rewarm(v) {
      if ((await redis.exists(keys.voucher(v.id))) === 1) return false;
      const lockKey = keys.warmLock(v.id);
      const token = `${process.pid}:${Math.random()}`;
      if ((await redis.set(lockKey, token, 'PX', WARM_LOCK_MS, 'NX')) !== 'OK') {
        // Another instance is rebuilding: wait for it rather than race it.
        for (let waited = 0; waited < WARM_LOCK_MS; waited += 50) {
          await sleep(50);
          if ((await redis.exists(keys.voucher(v.id))) === 1) return false;
        }
        throw new AppError('UNAVAILABLE', 'voucher state is being rebuilt; retry shortly');
      }
      try {
        return await rebuild(v);
      } finally {
        if ((await redis.get(lockKey)) === token) await redis.del(lockKey);
      }
    },

    async available(voucherId) {
      const stock = await redis.hget(keys.voucher(voucherId), 'stock');
      return stock === null ? null : Number(stock);
    },
  };
}
