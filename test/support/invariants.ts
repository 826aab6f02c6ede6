// Asserts the invariants of DESIGN.md §2 (src/audit) on a drained voucher.
import assert from 'node:assert/strict';
import { auditVoucher, type VoucherAudit } from '../../src/consistency/audit.js';
import type { Container } from '../../src/container.js';
import { waitFor } from './wait.js';

export interface VoucherTruth {
  dbStock: number;
  redisStock: number | null;
  redisBuyers: Map<string, number>;
  orders: { id: string; user_id: string; quantity: number; status: string; failure_reason: string | null }[];
}

export async function readTruth(c: Container, voucherId: string): Promise<VoucherTruth> {
  const voucher = await c.db.selectFrom('vouchers').select('stock').where('id', '=', voucherId).executeTakeFirstOrThrow();
  const orders = await c.db
    .selectFrom('orders')
    .select(['id', 'user_id', 'quantity', 'status', 'failure_reason'])
    .where('voucher_id', '=', voucherId)
    .execute();
  const stock = await c.redis.hget(c.keys.voucher(BigInt(voucherId)), 'stock');
  const buyers = await c.redis.hgetall(c.keys.buyers(BigInt(voucherId)));
  return {
    dbStock: voucher.stock,
    redisStock: stock === null ? null : Number(stock),
    redisBuyers: new Map(Object.entries(buyers).map(([u, q]) => [u, Number(q)])),
    orders,
  };
}

/** Waits until the voucher has no in-flight orders left (the pipeline has drained). */
export async function waitForDrain(c: Container, voucherId: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(`voucher ${voucherId} to drain`, async () => (await c.inflight.ofVoucher(BigInt(voucherId))).length === 0, timeoutMs, 50);
}

/** I1–I5 on both stores; `admitted` are the order ids that got a 202. */
export async function assertInvariants(c: Container, voucherId: string, admitted: string[]): Promise<VoucherTruth & { audit: VoucherAudit }> {
  const audit = await auditVoucher(c, BigInt(voucherId), { admitted, drained: true });
  assert.ok(audit, `voucher ${voucherId} exists`);
  for (const check of audit.checks) assert.ok(check.ok, `${check.id} ${check.name}: ${check.problems.join('; ')}`);
  return { ...(await readTruth(c, voucherId)), audit };
}
