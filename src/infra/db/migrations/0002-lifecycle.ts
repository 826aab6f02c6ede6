import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Order lifecycle: units released by an expiry or a cancellation wait in an outbox until Redis
// has them back (the release commits in SQL first; Redis follows exactly once, even after a
// crash in between). Synchronous (limited/common) claims keep their Idempotency-Key on the order.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('release_outbox')
    .addColumn('order_id', t.u64, (c) => c.primaryKey())
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('created_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();
  await db.schema.createIndex('release_outbox_voucher').on('release_outbox').column('voucher_id').execute();

  await db.schema.alterTable('orders').addColumn('idempotency_key', 'varchar(64)').execute();
  // NULL keys never collide, so claims without a key are unaffected.
  await db.schema
    .createIndex('orders_idempotency')
    .unique()
    .on('orders')
    .columns(['voucher_id', 'user_id', 'idempotency_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await dialectOf(db).schema.dropIndex(db, 'orders_idempotency', 'orders');
  await db.schema.alterTable('orders').dropColumn('idempotency_key').execute();
  await db.schema.dropTable('release_outbox').execute();
}
