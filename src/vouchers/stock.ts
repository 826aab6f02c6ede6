// Every change of a voucher's stock in SQL goes through these two, so each one is conditional
// where it must be and bumps the voucher's `version`: the exact observation of both stores
// (consistency/observe.ts) trusts an unchanged version to mean an unchanged stock.
import { sql, type Transaction } from 'kysely';
import type { Database } from '../infra/db/types.js';

/**
 * Takes `units` off the stock if that many are left. Callers hold the voucher row's lock and have
 * checked the stock already, so a miss means something is wrong: it throws, and the transaction
 * rolls back rather than oversell.
 */
export async function takeStock(trx: Transaction<Database>, voucherId: string, units: number): Promise<void> {
  const updated = await trx
    .updateTable('vouchers')
    .set({ stock: sql`stock - ${units}`, version: sql`version + 1` })
    .where('id', '=', voucherId)
    .where('stock', '>=', units)
    .executeTakeFirst();
  if (updated.numUpdatedRows !== 1n) throw new Error(`conditional stock update missed for voucher ${voucherId}`);
}

/** Gives `units` back to the stock (a released order). */
export async function returnStock(trx: Transaction<Database>, voucherId: string, units: number): Promise<void> {
  await trx.updateTable('vouchers').set({ stock: sql`stock + ${units}`, version: sql`version + 1` }).where('id', '=', voucherId).execute();
}
