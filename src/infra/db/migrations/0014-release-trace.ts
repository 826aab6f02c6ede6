import type { Kysely } from 'kysely';

// The traceparent of the span that released an order (its expiry, cancellation or refund), kept
// with the release's outbox row: the relay that gives the units back, and the waitlist promotion
// they make, join the released order's trace. NULL for untraced orders.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('release_outbox').addColumn('trace_parent', 'varchar(55)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('release_outbox').dropColumn('trace_parent').execute();
}
