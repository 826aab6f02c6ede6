// The units each buyer holds of a voucher in active orders (user_quantities), which the per-user
// limit is checked against. Both claim paths add to it in the transaction that takes the stock;
// a release takes it off again (lifecycle/release.ts).
import { sql, type Transaction } from 'kysely';
import { dialectOf, type QuantityChange, type SqlDialect } from '../infra/db/dialect.js';
import { int } from '../infra/db/literals.js';
import type { Database } from '../infra/db/types.js';

/**
 * One multi-row upsert adding each user's quantity to what they hold (a missing row counts as 0),
 * built by hand like the pipeline's other bulk statements (pipeline/bulk-sql.ts): integers only.
 */
export function addHeldSql(dialect: SqlDialect, voucherId: string | bigint, added: Map<string, number>): string {
  const voucher = int(voucherId);
  const values = [...added].map(([userId, quantity]) => `(${voucher},${int(userId)},${int(quantity)})`);
  return `insert into user_quantities (voucher_id, user_id, quantity) values ${values.join(',')} ${dialect.addQuantityOnConflict}`;
}

export async function addHeld(trx: Transaction<Database>, voucherId: string | bigint, added: Map<string, number>): Promise<void> {
  await sql.raw(addHeldSql(dialectOf(trx), voucherId, added)).execute(trx);
}

/** Takes each change's quantity off its (voucher, user) row in one statement; returns the rows changed. */
export async function takeHeld(trx: Transaction<Database>, changes: QuantityChange[]): Promise<number> {
  const { numAffectedRows } = await dialectOf(trx).subtractQuantities(changes).execute(trx);
  return Number(numAffectedRows);
}
