import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect.js';

const STATUSES = ['pending_payment', 'paid', 'cancelled', 'expired', 'failed'];
const EVENT_TYPES = ['stored', 'paid', 'expired', 'cancelled', 'failed', 'promoted'];

/**
 * Widens a one-of column (MySQL ENUM; a checked VARCHAR on PostgreSQL, its check named the way
 * PostgreSQL names a column's check when the table is created).
 */
async function widen(db: Kysely<unknown>, table: string, column: string, values: string[]): Promise<void> {
  const t = dialectOf(db).schema;
  if (dialectOf(db).name === 'mysql') {
    await db.schema.alterTable(table).modifyColumn(column, t.oneOf(column, values), (c) => c.notNull()).execute();
    return;
  }
  const check = sql.id(`${table}_${column}_check`);
  await sql`alter table ${sql.table(table)} drop constraint ${check}`.execute(db);
  await sql`alter table ${sql.table(table)} add constraint ${check} check (${sql.ref(column)} in (${sql.join(values.map((v) => sql.lit(v)))}))`.execute(db);
}

// Prices and payments. A voucher has a price (minor units) and a currency; an order keeps its
// amount (price × quantity) and currency from when it was stored, so a read needs no join and an
// amount never changes under a payment. A payment is a record of its own, unique on (provider,
// payment_id): `applied` (it paid its order) or `refund_due` (it arrived when the order could not
// take it, with the reason). A paid order can be refunded: `refunded`, final, with whether its
// units went back on sale. Rows from before this migration have price 0 in USD (DEFAULT_CURRENCY's
// own default).
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  const exactText = dialectOf(db).name === 'mysql' ? sql`varchar(128) character set utf8mb4 collate utf8mb4_bin` : sql`varchar(128)`;
  await db.schema.alterTable('vouchers').addColumn('price', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('vouchers').addColumn('currency', 'char(3)', (c) => c.notNull().defaultTo('USD')).execute();
  await db.schema.alterTable('orders').addColumn('amount', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('orders').addColumn('currency', 'char(3)', (c) => c.notNull().defaultTo('USD')).execute();
  await db.schema.alterTable('orders').addColumn('refunded_at', t.time).execute();
  // Whether a refund gave the units back on sale (NULL until refunded): the audit counts the units
  // of a refund without restock as still sold.
  await db.schema.alterTable('orders').addColumn('refund_restocked', 'boolean').execute();
  await widen(db, 'orders', 'status', [...STATUSES, 'refunded']);
  await widen(db, 'voucher_order_counts', 'status', [...STATUSES, 'refunded']);
  await widen(db, 'order_events', 'type', [...EVENT_TYPES, 'refunded', 'refund_due']);

  await db.schema
    .createTable('payments')
    .addColumn('id', t.serialId, (c) => t.serial(c).primaryKey())
    .addColumn('provider', 'varchar(32)', (c) => c.notNull())
    // A provider's ids are compared exactly (MySQL's default collations ignore case).
    .addColumn('payment_id', exactText, (c) => c.notNull())
    .addColumn('order_id', t.u64, (c) => c.notNull())
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'char(3)', (c) => c.notNull())
    .addColumn('status', t.oneOf('status', ['applied', 'refund_due']), (c) => c.notNull())
    .addColumn('reason', t.oneOf('reason', ['late', 'duplicate', 'mismatch']))
    .addColumn('created_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();
  await db.schema.createIndex('payments_provider_payment').unique().on('payments').columns(['provider', 'payment_id']).execute();
  // An order's applied payment (the order read joins on both columns); a voucher's refunds due
  // (the console); the listing.
  await db.schema.createIndex('payments_order').on('payments').columns(['order_id', 'status']).execute();
  await db.schema.createIndex('payments_voucher_status').on('payments').columns(['voucher_id', 'status']).execute();
  await db.schema.createIndex('payments_status_id').on('payments').columns(['status', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('payments').execute();
  await widen(db, 'order_events', 'type', EVENT_TYPES);
  await widen(db, 'voucher_order_counts', 'status', STATUSES);
  await widen(db, 'orders', 'status', STATUSES);
  for (const column of ['refund_restocked', 'refunded_at', 'currency', 'amount']) await db.schema.alterTable('orders').dropColumn(column).execute();
  for (const column of ['currency', 'price']) await db.schema.alterTable('vouchers').dropColumn(column).execute();
}
