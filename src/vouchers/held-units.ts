// The units each buyer holds of a voucher in active orders (user_quantities), which the per-user
// limit is checked against. Both claim paths add to it in the transaction that takes the stock (the
// pipeline locks its buyers' rows first); a release takes it off again (lifecycle/release.ts).
import { sql, type Transaction } from 'kysely';
import { dialectOf, type QuantityChange, type SqlDialect } from '../infra/db/dialect.js';
import { int } from '../infra/db/literals.js';
import type { Database } from '../infra/db/types.js';

/** A voucher and some of its buyers. */
export type BuyersOf = readonly [voucherId: string | bigint, userIds: readonly string[]];

/**
 * Locks the rows of these buyers of these vouchers in one statement (rows that do not exist yet
 * are not returned); built by hand like addHeldSql. One range of the primary key per voucher.
 */
export function lockHeldSql(groups: readonly BuyersOf[]): string {
  const ranges = groups.map(([voucherId, userIds]) => `(voucher_id = ${int(voucherId)} and user_id in (${userIds.map(int).join(',')}))`);
  return `select voucher_id, user_id, quantity from user_quantities where ${ranges.join(' or ')} for update`;
}

/** Key of a (voucher, user) pair in lockHeld's answer. */
export const heldKey = (voucherId: string | bigint, userId: string): string => `${voucherId}:${userId}`;

/** What each of these buyers holds of each voucher (by heldKey), their rows locked until the transaction ends (absent: none yet). */
export async function lockHeld(trx: Transaction<Database>, groups: readonly BuyersOf[]): Promise<Map<string, number>> {
  const { rows } = await sql.raw<{ voucher_id: string; user_id: string; quantity: number }>(lockHeldSql(groups)).execute(trx);
  return new Map(rows.map((r) => [heldKey(String(r.voucher_id), String(r.user_id)), r.quantity]));
}

/** Units a buyer adds to what they hold of a voucher. */
export interface HeldChange {
  voucherId: string | bigint;
  userId: string;
  quantity: number;
}

/**
 * One multi-row upsert adding each change's quantity to what its buyer holds of its voucher (a
 * missing row counts as 0), built by hand like the pipeline's other bulk statements
 * (pipeline/bulk-sql.ts): integers only.
 */
export function addHeldSql(dialect: SqlDialect, changes: readonly HeldChange[]): string {
  const values = changes.map((c) => `(${int(c.voucherId)},${int(c.userId)},${int(c.quantity)})`);
  return `insert into user_quantities (voucher_id, user_id, quantity) values ${values.join(',')} ${dialect.addQuantityOnConflict}`;
}

export async function addHeld(trx: Transaction<Database>, changes: readonly HeldChange[]): Promise<void> {
  await sql.raw(addHeldSql(dialectOf(trx), changes)).execute(trx);
}

/** Takes each change's quantity off its (voucher, user) row in one statement; returns the rows changed. */
export async function takeHeld(trx: Transaction<Database>, changes: QuantityChange[]): Promise<number> {
  const { numAffectedRows } = await dialectOf(trx).subtractQuantities(changes).execute(trx);
  return Number(numAffectedRows);
}
