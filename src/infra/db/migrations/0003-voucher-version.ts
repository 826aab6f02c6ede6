import { type Kysely, sql } from 'kysely';

// Every transaction that changes a voucher's stock also bumps its version, so reconciliation can
// tell that the database held still while it read Redis (src/consistency/observe.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('vouchers').addColumn('version', sql`bigint unsigned`, (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('vouchers').dropColumn('version').execute();
}
