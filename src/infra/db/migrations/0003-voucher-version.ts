import type { Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

// Every transaction that changes a voucher's stock also bumps its version, so reconciliation can
// tell that the database held still while it read Redis (src/consistency/observe.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  const t = dialectOf(db).schema;
  await db.schema.alterTable('vouchers').addColumn('version', t.u64, (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('vouchers').dropColumn('version').execute();
}
