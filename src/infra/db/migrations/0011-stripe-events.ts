import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Stripe delivers each event at least once, for days, in any order (payments/stripe-settle.ts).
// stripe_events: the events applied, written in the transaction of their effect, so a redelivery
// finds its id and changes nothing. stripe_held_refunds: refunds that arrived before the payment
// they refund, applied right after that payment is.
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema
    .createTable('stripe_events')
    .addColumn('event_id', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('type', 'varchar(64)', (c) => c.notNull())
    // Deliveries that reached a transaction of their effect: 1 when applied once, more for redeliveries.
    .addColumn('deliveries', 'integer', (c) => c.notNull())
    .addColumn('received_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();
  await db.schema
    .createTable('stripe_held_refunds')
    .addColumn('event_id', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('order_id', t.u64, (c) => c.notNull())
    .addColumn('payment_intent', 'varchar(128)', (c) => c.notNull())
    .addColumn('received_at', t.time, (c) => c.notNull().defaultTo(t.nowDefault))
    .$call(t.table)
    .execute();
  await db.schema.createIndex('stripe_held_refunds_order').on('stripe_held_refunds').column('order_id').execute();
  // Stripe's ids are case-sensitive: `evt_aB` and `evt_Ab` are two events (a primary key stays NOT NULL).
  for (const table of ['stripe_events', 'stripe_held_refunds']) await t.textComparison(db, table, 'event_id', 255, 'exact');
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('stripe_held_refunds').execute();
  await db.schema.dropTable('stripe_events').execute();
}
