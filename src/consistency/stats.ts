// Use case: an operator's view of one voucher in both stores, cheap enough to poll every second
// however many orders the voucher has: the voucher row and its order counts (orders/order-counts.ts,
// a few rows), both by primary key in one read-only transaction, and one Redis round trip.
import type { RedisClient } from '../infra/redis/client.js';
import { AppError } from '../errors.js';
import type { Db } from '../infra/db/database.js';
import type { StoredOrderStatus } from '../infra/db/types.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { readOrderCounts } from '../orders/order-counts.js';
import { segmentShards } from '../vouchers/segments.js';
import { parseSegmentShards } from '../vouchers/voucher.js';

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
}

export function voucherStatsUseCase({ db, redis, keys }: { db: Db; redis: RedisClient; keys: KeySpace }) {
  return async function voucherStats(voucherId: bigint): Promise<VoucherStats> {
    const id = voucherId.toString();
    // One snapshot (REPEATABLE READ) for both reads, so the stock and the order counts add up: read
    // apart, they could fall either side of a batch's commit. Read-only: it takes no locks.
    const { voucher, orders } = await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => ({
        voucher: await trx.selectFrom('vouchers').select(['initial_stock', 'stock', 'segment_shards']).where('id', '=', id).executeTakeFirst(),
        orders: await readOrderCounts(trx, id),
      }));
    if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
    // Summed over the voucher's segments (units on their way between two are left out).
    const shards = segmentShards({ id: voucherId, segmentShards: parseSegmentShards(voucher.segment_shards) }, keys);
    const segments = await Promise.all(
      shards.map((s) => Promise.all([redis.hmget(keys.voucher(voucherId, s), 'stock', 'inflight', 'dead'), redis.zcard(keys.waitlist(voucherId, s))])),
    );
    const sum = (pick: (s: (typeof segments)[number]) => string | number | null | undefined) => segments.reduce((n, s) => n + Number(pick(s) ?? 0), 0);
    return {
      initialStock: voucher.initial_stock,
      dbStock: voucher.stock,
      redisStock: segments.some(([[stock]]) => stock === null) ? null : sum(([[stock]]) => stock),
      inFlight: sum(([[, inflight]]) => inflight),
      orders,
      waitlist: sum(([, waiting]) => waiting),
      deadLetters: sum(([[, , dead]]) => dead),
    };
  };
}
