// Asserts the invariants of docs/design.md ("Invariants") (src/audit) on a drained voucher.
import assert from 'node:assert/strict';
import { auditVoucher, type VoucherAudit } from '../../src/consistency/audit.js';
import type { Container } from '../../src/container.js';
import { segmentShards } from '../../src/vouchers/segments.js';
import { waitFor } from '../../support/wait.js';

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
  // Every segment's stock and buyer counts (one segment unless the voucher was created with more).
  const id = BigInt(voucherId);
  const shards = await shardsOf(c, voucherId);
  const stocks = await Promise.all(shards.map((s) => c.redis.hget(c.keys.voucher(id, s), 'stock')));
  const redisBuyers = new Map<string, number>();
  for (const s of shards) {
    for (const [u, q] of Object.entries(await c.redis.hgetall(c.keys.buyers(id, s)))) redisBuyers.set(u, (redisBuyers.get(u) ?? 0) + Number(q));
  }
  return {
    dbStock: voucher.stock,
    redisStock: stocks.includes(null) ? null : stocks.reduce((n, s) => n + Number(s), 0),
    redisBuyers,
    orders,
  };
}

/** The shards of a voucher's segments. */
export async function shardsOf(c: Container, voucherId: string): Promise<number[]> {
  const v = await c.directory.get(BigInt(voucherId));
  return v ? segmentShards(v, c.keys) : [c.keys.shardOf(BigInt(voucherId))];
}

/** Waits until the voucher has no in-flight orders left (the pipeline has drained). */
export async function waitForDrain(c: Container, voucherId: string, timeoutMs = 30_000): Promise<void> {
  const shards = await shardsOf(c, voucherId);
  // A read refused while the client follows a new master (no offline queue) is asked again.
  let refused = '';
  // What is still in flight, for the message of a wait that runs out.
  let left = '';
  const drained = async () => {
    const records = await c.inflight.ofVoucher(BigInt(voucherId), shards).catch((err: Error) => void (refused = err.message));
    if (records) left = `${records.length} in flight, e.g. ${JSON.stringify(records.slice(0, 3))}`;
    return records !== undefined && records.length === 0;
  };
  await waitFor(() => `voucher ${voucherId} to drain (${left})${refused && ` (a read was refused: ${refused})`}`, drained, timeoutMs, 50);
}

/** I1–I5 on both stores; `admitted` are the order ids that got a 202. */
export async function assertInvariants(c: Container, voucherId: string, admitted: string[]): Promise<VoucherTruth & { audit: VoucherAudit }> {
  const audit = await auditVoucher(c, BigInt(voucherId), { admitted, drained: true });
  assert.ok(audit, `voucher ${voucherId} exists`);
  for (const check of audit.checks) assert.ok(check.ok, `${check.id} ${check.name}: ${check.problems.join('; ')}`);
  return { ...(await readTruth(c, voucherId)), audit };
}
