import type { Db } from '../infra/db/database.js';
import { type Voucher, voucherFromRow } from './voucher.js';

export interface VoucherRepository {
  insert(v: Voucher): Promise<void>;
  findById(id: bigint): Promise<Voucher | null>;
  /** Units held per user in active orders (the database's side of the per-user limit). */
  userQuantities(voucherId: bigint): Promise<Map<string, number>>;
}

export function createVoucherRepository(db: Db): VoucherRepository {
  return {
    async insert(v) {
      await db
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
        })
        .execute();
    },
    async findById(id) {
      const row = await db.selectFrom('vouchers').selectAll().where('id', '=', id.toString()).executeTakeFirst();
      return row ? voucherFromRow(row) : null;
    },
    async userQuantities(voucherId) {
      const rows = await db
        .selectFrom('user_quantities')
        .select(['user_id', 'quantity'])
        .where('voucher_id', '=', voucherId.toString())
        .where('quantity', '>', 0)
        .execute();
      return new Map(rows.map((r) => [r.user_id, r.quantity]));
    },
  };
}
