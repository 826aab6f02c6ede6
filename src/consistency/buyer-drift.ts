// The buyers' counts in Redis against their quantities in the database's snapshot (plus what work
// in flight adds, expected-state.ts). The buyers compared are all of them (the audit, the
// verification after a master change) or a given slice of them (buyer-slices.ts: a scheduled
// reconciliation compares a bounded number per pass, so its cost does not grow with the voucher).
// A slice's counts are read with HMGET inside the same windows (segment-window.ts), and their
// database quantities by primary key inside the same snapshot.
import type { Transaction } from 'kysely';
import type { Database } from '../infra/db/types.js';
import { inChunks } from './in-chunks.js';
import type { BuyerScope, Walked } from './segment-window.js';

/** Quantity rows per query. */
const QUANTITY_PAGE = 10_000;

export interface BuyerDrift {
  /** user -> [Redis, expected] where they differ. */
  drift: Map<string, [number, number]>;
  /** How many buyers were compared. */
  compared: number;
}

type Compare = (user: string, want: number) => void;

/** A comparer of `counts` (each compared buyer taken out of it) that collects the drift. */
function comparer(counts: Map<string, number>, notCompared: Set<string>) {
  const result: BuyerDrift = { drift: new Map(), compared: 0 };
  const compare: Compare = (user, want) => {
    const have = counts.get(user) ?? 0;
    counts.delete(user);
    if (notCompared.has(user)) return;
    result.compared += 1;
    if (have !== want) result.drift.set(user, [have, want]);
  };
  return { compare, result };
}

/** The slice's counts against its buyers' database quantities plus `extra` (by primary key, in the snapshot). */
async function sliceDrift(trx: Transaction<Database>, voucherId: string, users: readonly string[], counts: Map<string, number>, extra: Map<string, number>, notCompared: Set<string>) {
  const { compare, result } = comparer(counts, notCompared);
  const quantities = new Map<string, number>();
  for (const chunk of inChunks(users)) {
    const rows = await trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).where('user_id', 'in', chunk).execute();
    for (const r of rows) quantities.set(r.user_id, r.quantity);
  }
  for (const user of users) compare(user, (quantities.get(user) ?? 0) + (extra.get(user) ?? 0));
  return result;
}

/**
 * Compares the walked counts (`counts`, emptied on the way) with the database's quantities plus
 * `extra`, page by page of the snapshot, so only one side is ever held whole.
 */
async function everyBuyerDrift(trx: Transaction<Database>, voucherId: string, counts: Map<string, number>, extra: Map<string, number>, notCompared: Set<string>) {
  const { compare, result } = comparer(counts, notCompared);
  const left = new Map(extra);
  let after: string | null = null;
  for (;;) {
    let page = trx.selectFrom('user_quantities').select(['user_id', 'quantity']).where('voucher_id', '=', voucherId).where('quantity', '>', 0);
    if (after !== null) page = page.where('user_id', '>', after);
    const rows = await page.orderBy('user_id').limit(QUANTITY_PAGE).execute();
    for (const r of rows) {
      compare(r.user_id, r.quantity + (left.get(r.user_id) ?? 0));
      left.delete(r.user_id);
    }
    if (rows.length < QUANTITY_PAGE) break;
    after = rows[rows.length - 1]!.user_id;
  }
  for (const [user, units] of left) compare(user, units);
  for (const user of counts.keys()) compare(user, 0);
  return result;
}

/** Sums the segments' walked counts (a buyer normally has one segment: their home). */
function mergeCounts(walked: Walked[]): Map<string, number> {
  if (walked.length === 1) return walked[0]!.buyers;
  const all = new Map<string, number>();
  for (const { buyers } of walked) for (const [user, units] of buyers) all.set(user, (all.get(user) ?? 0) + units);
  return all;
}

/**
 * The buyers in `scope` whose walked count differs from their quantity plus `extra`. Buyers
 * admitted while their segment was walked are not compared (their count moved during the walk).
 */
export async function buyerDrift(trx: Transaction<Database>, voucherId: string, scope: BuyerScope, walked: Walked[], extra: Map<string, number>): Promise<BuyerDrift> {
  const notCompared = new Set(walked.flatMap((w) => [...w.admittedUsers]));
  const counts = mergeCounts(walked);
  return scope.kind === 'all' ? everyBuyerDrift(trx, voucherId, counts, extra, notCompared) : sliceDrift(trx, voucherId, scope.users, counts, extra, notCompared);
}
