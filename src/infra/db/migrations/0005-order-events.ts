import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Order events waiting to be relayed to RabbitMQ (the transactional outbox): each row is written
// in the transaction that changed the order and deleted once the broker confirmed it. The
// auto-increment id is the event's id (the consumers' dedupe key) and its place in the order's
// history; InnoDB keeps the counter across restarts (MariaDB ≥ 10.2), so an id is never reused
// even after every row was deleted.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('order_events')
    .addColumn('event_id', t.serialId, (c) => t.serial(c).primaryKey())
    .addColumn('order_id', t.u64, (c) => c.notNull())
    .addColumn('voucher_id', t.u64, (c) => c.notNull())
    .addColumn('user_id', t.u64, (c) => c.notNull())
    .addColumn('type', t.oneOf('type', ['stored', 'paid', 'expired', 'cancelled', 'failed', 'promoted']), (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('status', 'varchar(20)', (c) => c.notNull())
    .addColumn('created_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();
  // The relay checks, per order, whether an earlier event is still unsent.
  await db.schema.createIndex('order_events_order').on('order_events').columns(['order_id', 'event_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('order_events').execute();
}
