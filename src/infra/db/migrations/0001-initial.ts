import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('vouchers')
    .addColumn('id', t.u64, (c) => c.primaryKey())
    .addColumn('title', 'varchar(200)', (c) => c.notNull())
    .addColumn('kind', t.oneOf('kind', ['seckill', 'limited', 'common']), (c) => c.notNull())
    .addColumn('initial_stock', 'integer', (c) => c.notNull())
    .addColumn('stock', 'integer', (c) => c.notNull().check(sql`stock >= 0`))
    .addColumn('begin_at', t.time, (c) => c.notNull())
    .addColumn('end_at', t.time, (c) => c.notNull())
    .addColumn('per_user_limit', 'integer', (c) => c.notNull())
    .addColumn('payment_timeout_seconds', 'integer', (c) => c.notNull())
    .addColumn('waitlist', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('claim_token', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();

  await db.schema
    .createTable('orders')
    .addColumn('id', t.u64, (c) => c.primaryKey())
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity > 0`))
    .addColumn('status', t.oneOf('status', ['pending_payment', 'paid', 'cancelled', 'expired', 'failed']), (c) => c.notNull())
    .addColumn('created_at', t.time, (c) => c.notNull())
    .addColumn('expires_at', t.time)
    .addColumn('paid_at', t.time)
    .addColumn('updated_at', t.time, (c) => c.notNull().defaultTo(t.touchedAtDefault))
    .addColumn('failure_reason', 'varchar(255)')
    .$call(t.table)
    .execute();
  await t.touchOnUpdate(db, 'orders', 'updated_at');
  await db.schema.createIndex('orders_user_created').on('orders').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('orders_voucher_status').on('orders').columns(['voucher_id', 'status']).execute();
  await db.schema.createIndex('orders_status_expires').on('orders').columns(['status', 'expires_at']).execute();

  await db.schema
    .createTable('user_quantities')
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity >= 0`))
    .addPrimaryKeyConstraint('user_quantities_pk', ['voucher_id', 'user_id'])
    .$call(t.table)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('user_quantities').execute();
  await db.schema.dropTable('orders').execute();
  await db.schema.dropTable('vouchers').execute();
}
