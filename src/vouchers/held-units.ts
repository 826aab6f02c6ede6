// The units each buyer holds of a voucher in active orders (user_quantities), which the per-user
// limit is checked against. Both claim paths add to it in the transaction that takes the stock (the
// pipeline locks its buyers' rows first); a release takes it off again (lifecycle/release.ts).
import { sql, type Transaction } from 'kysely';
import { dialectOf, type QuantityChange, type SqlDialect } from '../infra/db/dialect.js';
import { int } from '../infra/db/literals.js';
import type { Database } from '../infra/db/types.js';

/** Locks the voucher's rows of these users (rows that do not exist yet are not returned); built by hand like addHeldSql. */
export function lockHeldSql(voucherId: string | bigint, userIds: string[]): string {
  return `select user_id, quantity from user_quantities where voucher_id = ${int(voucherId)} and user_id in (${userIds.map(int).join(',')}) for update`;
}

/** What each of these users holds of the voucher, their rows locked until the transaction ends (absent: none yet). */
export async function lockHeld(trx: Transaction<Database>, voucherId: string | bigint, userIds: string[]): Promise<Map<string, number>> {
  const { rows } = await sql.raw<{ user_id: string; quantity: number }>(lockHeldSql(voucherId, userIds)).execute(trx);
  return new Map(rows.map((r) => [r.user_id, r.quantity]));
}

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
