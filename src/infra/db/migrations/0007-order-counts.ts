import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.js';

// Each voucher's orders by status, kept by the transactions that store orders or change their
// status (orders/order-counts.ts), so reading them does not grow with the orders. The backfill
// counts the orders stored so far, once, and is exact only because nothing writes orders while it
// runs: migrations run before a process serves (`serve` migrates before it listens), so run
// `seckill migrate` with every process of the previous version stopped.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('voucher_order_counts')
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('status', t.oneOf('status', ['pending_payment', 'paid', 'cancelled', 'expired', 'failed']), (c) => c.notNull())
    .addColumn('slot', 'smallint', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('voucher_order_counts_pk', ['voucher_id', 'status', 'slot'])
    .$call(t.table)
    .execute();
  // One grouped pass over orders_voucher_status (it covers both columns).
  await sql`insert into voucher_order_counts (voucher_id, status, slot, n)
    select voucher_id, status, 0, count(*) from orders group by voucher_id, status`.execute(db);

  // Reconciliation looks for a voucher's overdue unpaid orders every few seconds: with the deadline
  // in the index it reads those only, not every pending order of the voucher (and their rows).
  await db.schema.createIndex('orders_voucher_status_expires').on('orders').columns(['voucher_id', 'status', 'expires_at']).execute();
  await t.dropIndex(db, 'orders_voucher_status', 'orders');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema.createIndex('orders_voucher_status').on('orders').columns(['voucher_id', 'status']).execute();
  await t.dropIndex(db, 'orders_voucher_status_expires', 'orders');
  await db.schema.dropTable('voucher_order_counts').execute();
}
