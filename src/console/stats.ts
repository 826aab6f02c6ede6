// Use case: an operator's view of one voucher in both stores, cheap enough to poll every second
// however many orders the voucher has: one statement reads the voucher row and its order counts
// (orders/order-counts.ts, a few rows), both by primary key, while one Redis round trip reads the
// segments. Two round trips side by side, not six one after another: a poll waits for each of them
// behind whatever else the event loop is doing, so their number, more than their cost, sets its
// latency on a busy process.
import { sql } from 'kysely';
import type { RedisClient } from '../infra/redis/client.js';
import { AppError } from '../errors.js';
import type { Db } from '../infra/db/database.js';
import type { StoredOrderStatus } from '../infra/db/types.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { countsByStatus } from '../orders/order-counts.js';
import { refundsDue } from '../payments/list-payments.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { segmentShards } from '../vouchers/segments.js';
import type { Voucher } from '../vouchers/voucher.js';

export interface VoucherStats {
  initialStock: number;
  dbStock: number;
  /** null for limited/common vouchers and while the seckill state is missing. */
  redisStock: number | null;
  /** Orders admitted and not stored yet. */
  inFlight: number;
  orders: Record<StoredOrderStatus, number>;
  waitlist: number;
  /** Orders of this voucher moved to the dead-letter stream (failed in the pipeline). */
  deadLetters: number;
  /** Payments of its orders kept refund_due: money the shop owes back. */
  refundDue: number;
}

export interface VoucherStatsDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  directory: Pick<VoucherDirectory, 'get'>;
}

/**
 * The stock and the order counts from one statement: one snapshot on both databases, so they add
 * up (read apart, they could fall either side of a batch's commit). Null: no such voucher.
 */
async function readStored(db: Db, voucherId: string) {
  const rows = await db
    .selectFrom('vouchers as v')
    .leftJoin('voucher_order_counts as c', 'c.voucher_id', 'v.id')
    .select(['v.initial_stock', 'v.stock', 'c.status', sql<string | number | null>`sum(c.n)`.as('n')])
    .where('v.id', '=', voucherId)
    .groupBy(['v.initial_stock', 'v.stock', 'c.status'])
    .execute();
  if (rows.length === 0) return null;
  return { initialStock: rows[0]!.initial_stock, stock: rows[0]!.stock, orders: countsByStatus(rows) };
}

/** Summed over the voucher's segments (units on their way between two are left out). */
async function readSegments(redis: RedisClient, keys: KeySpace, voucher: Voucher) {
  const segments = await Promise.all(
    segmentShards(voucher, keys).map((s) => Promise.all([redis.hmget(keys.voucher(voucher.id, s), 'stock', 'inflight', 'dead'), redis.zcard(keys.waitlist(voucher.id, s))])),
  );
  const sum = (pick: (s: (typeof segments)[number]) => string | number | null | undefined) => segments.reduce((n, s) => n + Number(pick(s) ?? 0), 0);
  return {
    redisStock: segments.some(([[stock]]) => stock === null) ? null : sum(([[stock]]) => stock),
    inFlight: sum(([[, inflight]]) => inflight),
    waitlist: sum(([, waiting]) => waiting),
    deadLetters: sum(([[, , dead]]) => dead),
  };
}

export function voucherStatsUseCase({ db, redis, keys, directory }: VoucherStatsDeps) {
  return async function voucherStats(voucherId: bigint): Promise<VoucherStats> {
    const notFound = () => new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
    // The directory knows the voucher's segments (fixed at creation), so both stores are asked at once.
    const voucher = await directory.get(voucherId);
    if (!voucher) throw notFound();
    const [stored, segments, refundDue] = await Promise.all([readStored(db, voucherId.toString()), readSegments(redis, keys, voucher), refundsDue(db, voucherId.toString())]);
    if (!stored) throw notFound();
    return { initialStock: stored.initialStock, dbStock: stored.stock, ...segments, orders: stored.orders, refundDue };
  };
}
