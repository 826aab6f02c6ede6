// Every change of a voucher's stock in SQL goes through these two, so each one is conditional
// where it must be and bumps the voucher's `version`: the exact observation of both stores
// (consistency/observe.ts) trusts an unchanged version to mean an unchanged stock.
import { sql, type Transaction } from 'kysely';
import { int } from '../infra/db/literals.js';
import type { Database } from '../infra/db/types.js';

/**
 * Takes each voucher's units off its stock if that many are left, in one statement. Callers hold
 * the vouchers' row locks and have checked the stock already, so a miss means something is wrong:
 * it throws, and the transaction rolls back rather than oversell.
 */
export async function takeStock(trx: Transaction<Database>, units: ReadonlyMap<string, number>): Promise<void> {
  const ids = [...units.keys()];
  const taken = sql.raw<number>(`case id ${[...units].map(([id, n]) => `when ${int(id)} then ${int(n)}`).join(' ')} end`);
  const updated = await trx
    .updateTable('vouchers')
    .set({ stock: sql`stock - ${taken}`, version: sql`version + 1` })
    .where('id', 'in', ids)
    .where('stock', '>=', taken)
    .executeTakeFirst();
  if (updated.numUpdatedRows !== BigInt(ids.length)) throw new Error(`conditional stock update missed for voucher(s) ${ids.join(', ')}`);
}

/** Gives `units` back to the stock (a released order). */
export async function returnStock(trx: Transaction<Database>, voucherId: string, units: number): Promise<void> {
  await trx.updateTable('vouchers').set({ stock: sql`stock + ${units}`, version: sql`version + 1` }).where('id', '=', voucherId).execute();
}
