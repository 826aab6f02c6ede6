// What both stores say about one sale's vouchers once its admissions are in: how long until every
// admitted order is stored, each voucher's orders, and the verdict (stored = admitted, nothing
// oversold or duplicated, Redis stock and in-flight count equal to the database's).
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import type { Db } from '../../src/infra/db/database.js';
import type { KeySpace } from '../../src/infra/redis/keys.js';

export interface SaleVoucher {
  id: string;
  stock: number;
}

export interface VoucherOrders {
  id: string;
  orders: number;
}

export interface Verdict {
  ok: boolean;
  stored: number;
  admitted: number;
  oversold: number;
  duplicated: number;
  /** Vouchers whose Redis stock or in-flight count differs from the database. */
  redisDrift: number;
  problems: string[];
}

const POLL_MS = 50;
const ID_CHUNK = 1_000;

const storedCount = async (db: Db, ids: string[]) =>
  Number((await db.selectFrom('orders').select(sql<number>`count(*)`.as('n')).where('voucher_id', 'in', ids).executeTakeFirstOrThrow()).n);

/** Milliseconds from now until the vouchers' stored orders reach `admitted`. */
export async function waitStored(db: Db, vouchers: SaleVoucher[], admitted: number, timeoutMs: number): Promise<number> {
  const ids = vouchers.map((v) => v.id);
  const at = performance.now();
  for (;;) {
    const stored = await storedCount(db, ids);
    if (stored >= admitted) return performance.now() - at;
    if (performance.now() - at > timeoutMs) throw new Error(`${stored} of ${admitted} orders stored after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

export async function checkSale(db: Db, redis: Redis, keys: KeySpace, vouchers: SaleVoucher[], orderIds: string[]): Promise<{ verdict: Verdict; perVoucher: VoucherOrders[] }> {
  const ids = vouchers.map((v) => v.id);
  const problems: string[] = [];
  const rows = await db
    .selectFrom('orders')
    .select(['voucher_id', sql<number>`count(*)`.as('n'), sql<number>`count(distinct user_id)`.as('users')])
    .select(sql<number>`sum(case when status in ('pending_payment', 'paid') then quantity else 0 end)`.as('active'))
    .where('voucher_id', 'in', ids)
    .groupBy('voucher_id')
    .execute();
  const byVoucher = new Map(rows.map((r) => [String(r.voucher_id), { n: Number(r.n), users: Number(r.users), active: Number(r.active) }]));
  const dbRows = new Map((await db.selectFrom('vouchers').select(['id', 'stock', 'initial_stock']).where('id', 'in', ids).execute()).map((v) => [String(v.id), v]));

  // Every admitted order id is among the stored ones (counts alone could hide a lost order behind a stray one).
  let found = 0;
  for (let i = 0; i < orderIds.length; i += ID_CHUNK) {
    const chunk = orderIds.slice(i, i + ID_CHUNK);
    found += Number((await db.selectFrom('orders').select(sql<number>`count(*)`.as('n')).where('id', 'in', chunk).where('voucher_id', 'in', ids).executeTakeFirstOrThrow()).n);
  }
  if (found !== orderIds.length) problems.push(`${orderIds.length - found} admitted order ids not stored`);

  const redisState = await Promise.all(vouchers.map((v) => redis.hmget(keys.voucher(BigInt(v.id)), 'stock', 'inflight')));
  let stored = 0;
  let oversold = 0;
  let duplicated = 0;
  let redisDrift = 0;
  for (const [i, v] of vouchers.entries()) {
    const counts = byVoucher.get(v.id) ?? { n: 0, users: 0, active: 0 };
    const row = dbRows.get(v.id);
    stored += counts.n;
    duplicated += counts.n - counts.users;
    if (!row) {
      problems.push(`voucher ${v.id} not in the database`);
      continue;
    }
        if (row.stock !== row.initial_stock - counts.active) problems.push(`voucher ${v.id}: DB stock ${row.stock}, initial ${row.initial_stock} − ${counts.active} active`);
    oversold += Math.max(0, counts.active - row.initial_stock, -row.stock);
    const [redisStock, inflight] = redisState[i]!;
    if (Number(redisStock) !== row.stock || Number(inflight ?? 0) !== 0) {
      redisDrift++;
      problems.push(`voucher ${v.id}: Redis stock ${redisStock} in flight ${inflight}, DB stock ${row.stock}`);
    }
  }
  if (stored !== orderIds.length) problems.push(`${stored} orders stored, ${orderIds.length} admitted`);
  if (oversold) problems.push(`${oversold} units oversold`);
  if (duplicated) problems.push(`${duplicated} duplicated (voucher, user) orders`);
  return {
    verdict: { ok: problems.length === 0, stored, admitted: orderIds.length, oversold, duplicated, redisDrift, problems: problems.slice(0, 20) },
    perVoucher: vouchers.map((v) => ({ id: v.id, orders: byVoucher.get(v.id)?.n ?? 0 })),
  };
}
