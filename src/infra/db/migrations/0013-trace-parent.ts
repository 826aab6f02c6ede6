import type { Kysely } from 'kysely';

// The W3C traceparent of a traced claim (tracing/spans.ts): kept with its order, so the payment,
// the expiry and the cancellation of the order join the claim's trace, and with each outbox row,
// so its publish and its webhook delivery do. NULL for every untraced order and event. Adding a
// nullable column is instant on both databases (no table rewrite on MariaDB 10.3+ or PostgreSQL 11+).
const TABLES = ['orders', 'order_events', 'webhook_events', 'webhook_given_up'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await db.schema.alterTable(table).addColumn('trace_parent', 'varchar(55)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await db.schema.alterTable(table).dropColumn('trace_parent').execute();
}
