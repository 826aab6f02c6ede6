import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Order events waiting to be POSTed to WEBHOOK_URL (webhooks/): the outbox writes a row here in the
// change's transaction, under the same event id as its order_events row (ids come from that
// table's counter, so a receiver and a RabbitMQ consumer dedupe by one id). The relay leases a
// row by moving due_at past the round (leased_by says whose round), and a failed attempt moves it
// to its next try; a delivered row is deleted. An event given up after WEBHOOK_MAX_AGE_SECONDS
// moves to webhook_given_up, where operators find it. `type` is text: the relay sends whatever
// the outbox holds.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  for (const table of ['webhook_events', 'webhook_given_up'] as const) {
    await db.schema
      .createTable(table)
      .addColumn('event_id', t.u64, (c) => c.primaryKey())
      .addColumn('order_id', t.u64, (c) => c.notNull())
      .addColumn('voucher_id', t.u64, (c) => c.notNull())
      .addColumn('user_id', t.u64, (c) => c.notNull())
      .addColumn('type', 'varchar(20)', (c) => c.notNull())
      .addColumn('quantity', 'integer', (c) => c.notNull())
      .addColumn('status', 'varchar(20)', (c) => c.notNull())
      .addColumn('created_at', t.time, (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'varchar(255)')
      .$call((b) =>
        table === 'webhook_events'
          ? b.addColumn('due_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault)).addColumn('leased_by', 'varchar(40)')
          : b.addColumn('given_up_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault)),
      )
      .$call(t.table)
      .execute();
  }
  // The relay takes due rows, and checks per order whether an earlier event is still waiting.
  await db.schema.createIndex('webhook_events_due').on('webhook_events').columns(['due_at', 'event_id']).execute();
  await db.schema.createIndex('webhook_events_order').on('webhook_events').columns(['order_id', 'event_id']).execute();
  await db.schema.createIndex('webhook_given_up_order').on('webhook_given_up').columns(['order_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_given_up').execute();
  await db.schema.dropTable('webhook_events').execute();
}
