import type { Db } from '../infra/db/database.js';
import { type Voucher, voucherFromRow } from './voucher.js';

/** What rebuilding a voucher's Redis state needs, read from ONE consistent snapshot. */
export interface WarmSnapshot {
  voucher: Voucher;
  /** Units held per user in active orders. */
  held: Map<string, number>;
  /** Orders whose units the database has back but Redis may not (release outbox). */
  released: { orderId: string; userId: string }[];
}

export interface VoucherRepository {
  /** `queueSeed`: a queue voucher's secret seed (hex), stored with it in one transaction. */
  insert(v: Voucher, queueSeed?: string): Promise<void>;
  findById(id: bigint): Promise<Voucher | null>;
  /** The voucher ids next to `id`: the highest below it and the lowest at or above it (null: none). */
  neighbours(id: bigint): Promise<{ below: bigint | null; atOrAbove: bigint | null }>;
  /** The newest vouchers first (ids are time-ordered snowflakes), at most `limit`. */
  listNewest(limit: number): Promise<Voucher[]>;
  warmSnapshot(voucherId: bigint): Promise<WarmSnapshot | null>;
}

export function createVoucherRepository(db: Db): VoucherRepository {
  return {
    async insert(v, queueSeed) {
      const row = db
        .insertInto('vouchers')
        .values({
          id: v.id,
          title: v.title,
          kind: v.kind,
          initial_stock: v.initialStock,
          stock: v.stock,
          begin_at: v.beginAt,
          end_at: v.endAt,
          per_user_limit: v.perUserLimit,
          payment_timeout_seconds: v.paymentTimeoutSeconds,
          waitlist: v.waitlist,
          claim_token: v.claimToken,
          segment_shards: v.segmentShards?.join(',') ?? null,
          queue_opens_at: v.queue?.opensAt ?? null,
          queue_commitment: v.queue?.commitment ?? null,
          price: v.price,
          currency: v.currency,
        });
      if (queueSeed === undefined) return void (await row.execute());
      await db.transaction().execute(async (trx) => {
        await trx.executeQuery(row.compile());
        await trx.insertInto('queue_draws').values({ voucher_id: v.id, seed: queueSeed }).execute();
      });
    },
    async findById(id) {
      const row = await db.selectFrom('vouchers').selectAll().where('id', '=', id.toString()).executeTakeFirst();
      return row ? voucherFromRow(row) : null;
    },
    async neighbours(id) {
      // Two scalar subqueries in one statement (one snapshot), each a seek on the primary key.
      const text = id.toString();
      const row = await db
        .selectNoFrom((eb) => [
          eb.selectFrom('vouchers').select((v) => v.fn.max('id').as('id')).where('id', '<', text).as('below'),
          eb.selectFrom('vouchers').select((v) => v.fn.min('id').as('id')).where('id', '>=', text).as('atOrAbove'),
        ])
        .executeTakeFirstOrThrow();
      const id64 = (v: string | null) => (v === null ? null : BigInt(v));
      return { below: id64(row.below), atOrAbove: id64(row.atOrAbove) };
    },
    async listNewest(limit) {
      const rows = await db.selectFrom('vouchers').selectAll().orderBy('id', 'desc').limit(limit).execute();
      return rows.map(voucherFromRow);
    },
    async warmSnapshot(voucherId) {
      // REPEATABLE READ: the three reads see the same committed state, so a release is either in
      // the stock and listed as released, or in neither.
      return db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
        const id = voucherId.toString();
        const row = await trx.selectFrom('vouchers').selectAll().where('id', '=', id).executeTakeFirst();
        if (!row) return null;
        const held = await trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', id).where('quantity', '>', 0).execute();
        const released = await trx.selectFrom('release_outbox').select(['order_id', 'user_id']).where('voucher_id', '=', id).execute();
        return {
          voucher: voucherFromRow(row),
          held: new Map(held.map((r) => [r.user_id, r.quantity])),
          released: released.map((r) => ({ orderId: r.order_id, userId: r.user_id })),
        };
      });
    },
  };
}
