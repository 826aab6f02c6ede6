// The audit reads a voucher in pages of users (audit.ts): here pages of PAGE on vouchers of a few
// thousand orders, with each anomaly planted in the database where one page ends and the next
// begins, or before the first and after the last quantity row.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import { auditVoucher, type VoucherAudit } from '../../src/consistency/audit.js';
import type { StoredOrderStatus } from '../../src/infra/db/types.js';
import { createVoucher, startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'audit_pages', { RECONCILE_INTERVAL_MS: '0' });

const PAGE = 500;
const BUYERS = 3_000;
const LIMIT = 3;
/** Buyer i (1-based) is user 10·i: room for users without a quantity row between two buyers. */
const user = (i: number) => String(10 * i);
/** Units of buyer i, in that many orders: a few hold two or three. */
const unitsOf = (i: number) => (i % 97 === 0 ? 3 : i % 31 === 0 ? 2 : 1);

let nextId = 1_000_000_000_000n;
interface Planted {
  user: string;
  status?: StoredOrderStatus;
  quantity?: number;
  failure_reason?: string | null;
}
/** `failure_reason` of a failed order: POISON unless given (null or '' plant one without a reason). */
function orderRow(voucherId: string, { user: userId, status = 'pending_payment', quantity = 1, failure_reason }: Planted) {
  return {
    id: String(nextId++),
    voucher_id: voucherId,
    user_id: userId,
    quantity,
    status,
    created_at: new Date(),
    expires_at: status === 'failed' ? null : new Date(Date.now() + 600_000),
    failure_reason: failure_reason === undefined && status === 'failed' ? 'POISON' : (failure_reason ?? null),
  };
}

async function insertOrders(voucherId: string, orders: Planted[]): Promise<string[]> {
  const rows = orders.map((o) => orderRow(voucherId, o));
  for (let i = 0; i < rows.length; i += 1000) await t.c.db.insertInto('orders').values(rows.slice(i, i + 1000)).execute();
  return rows.map((r) => r.id);
}

/**
 * The orders of a consistent voucher of BUYERS buyers: each holds unitsOf(i) units in as many
 * pending or paid orders, every 7th also an expired or cancelled one, every 50th a failed one.
 */
function buyersOrders(): Planted[] {
  const orders: Planted[] = [];
  for (let i = 1; i <= BUYERS; i++) {
    for (let n = 0; n < unitsOf(i); n++) orders.push({ user: user(i), status: n % 2 ? 'paid' : 'pending_payment' });
    if (i % 7 === 0) orders.push({ user: user(i), status: i % 2 ? 'expired' : 'cancelled' });
    if (i % 50 === 0) orders.push({ user: user(i), status: 'failed' });
  }
  return orders;
}

/**
 * The buyer that ends the first page by the walk's rule (audit.ts): at the user of its PAGE-th
 * order or quantity row, whichever comes first, with all of that user's orders. Here every buyer
 * has an order, so orders end it; `before` are users of orders planted ahead of the first buyer.
 */
function firstPageEnd(before = 0): number {
  const users = buyersOrders().map((o) => Number(o.user) / 10);
  return users[PAGE - 1 - before]!;
}
// The first page ends inside the orders of one buyer: the page reads the rest of them.
assert.equal(buyersOrders()[PAGE]!.user, user(firstPageEnd()));

/** A voucher of these orders, each buyer's quantity row what they hold in them, 10 units left. */
async function soldVoucher(orders = buyersOrders()): Promise<{ id: string; stored: string[] }> {
  const held = new Map<string, number>();
  for (const { user: u, status = 'pending_payment', quantity = 1 } of orders) {
    if (status !== 'failed') held.set(u, (held.get(u) ?? 0) + (status === 'pending_payment' || status === 'paid' ? quantity : 0));
  }
  const sold = [...held.values()].reduce((a, b) => a + b, 0);
  const v = await createVoucher(t, { kind: 'common', stock: sold + 10, perUserLimit: LIMIT });
  const stored = await insertOrders(v.id, orders);
  const rows = [...held].map(([userId, quantity]) => ({ voucher_id: v.id, user_id: userId, quantity }));
  for (let i = 0; i < rows.length; i += 1000) await t.c.db.insertInto('user_quantities').values(rows.slice(i, i + 1000)).execute();
  await t.c.db.updateTable('vouchers').set({ stock: 10 }).where('id', '=', v.id).execute();
  return { id: v.id, stored };
}

async function audit(voucherId: string, options: { admitted?: string[]; pageSize?: number } = {}): Promise<VoucherAudit> {
  const result = await auditVoucher(t.c, BigInt(voucherId), { pageSize: PAGE, ...options });
  assert.ok(result);
  return result;
}

const failing = (a: VoucherAudit) => Object.fromEntries(a.checks.filter((c) => !c.ok).map((c) => [c.id, c.problems]));

/** What the orders table says, in one statement (fine at this size). */
async function truth(voucherId: string) {
  const rows = await t.c.db.selectFrom('orders').select(['status', 'quantity']).where('voucher_id', '=', voucherId).execute();
  const orders: Record<string, number> = { pending_payment: 0, paid: 0, cancelled: 0, expired: 0, failed: 0, refunded: 0 };
  for (const r of rows) orders[r.status]! += 1;
  const sold = rows.filter((r) => r.status === 'pending_payment' || r.status === 'paid').reduce((n, r) => n + r.quantity, 0);
  return { orders, sold };
}

describe('the audit in pages', () => {
  it('when the voucher is consistent, then every page size finds it so and adds up to the same totals', async () => {
    const v = await soldVoucher();
    const expected = await truth(v.id);
    for (const pageSize of [PAGE, 61, 4_999, undefined]) {
      const a = await audit(v.id, { pageSize, admitted: v.stored });
      assert.deepEqual(failing(a), {}, `pages of ${pageSize}`);
      assert.deepEqual([a.sold, a.orders, a.dbStock], [expected.sold, expected.orders, 10], `pages of ${pageSize}`);
    }
  });

  it('when more units are sold than the stock, then I1 fails', async () => {
    const v = await soldVoucher();
    // Eleven more units, on the buyers around the end of the first page, their rows kept in step.
    const buyers = Array.from({ length: 11 }, (_, k) => firstPageEnd() - 5 + k);
    await insertOrders(v.id, buyers.map((i) => ({ user: user(i) })));
    for (const i of buyers) await t.c.db.updateTable('user_quantities').set({ quantity: unitsOf(i) + 1 }).where('voucher_id', '=', v.id).where('user_id', '=', user(i)).execute();
    const a = await audit(v.id);
    const { sold } = await truth(v.id);
    assert.deepEqual(failing(a), { I1: [`sold ${sold} > initial stock ${sold - 1}`, `DB stock 10 != initial ${sold - 1} - sold ${sold}`] });
  });

  it('when quantity rows disagree with the orders on both sides of a page end, then I2 names both users', async () => {
    const v = await soldVoucher();
    const [last, first] = [firstPageEnd(), firstPageEnd() + 1];
    for (const i of [last, first]) await t.c.db.updateTable('user_quantities').set({ quantity: unitsOf(i) + 1 }).where('voucher_id', '=', v.id).where('user_id', '=', user(i)).execute();
    const a = await audit(v.id);
    assert.deepEqual(failing(a), {
      I2: [`user ${user(last)}: quantity row ${unitsOf(last) + 1}, active orders ${unitsOf(last)}`, `user ${user(first)}: quantity row ${unitsOf(first) + 1}, active orders ${unitsOf(first)}`],
    });
  });

  it('when orders belong to users without a quantity row, then I2 finds each one, wherever its user falls', async () => {
    const v = await soldVoucher();
    // Before the first row, first of the second page, after the last row.
    const lost = ['3', String(10 * firstPageEnd(1) + 5), String(10 * BUYERS + 7)];
    await insertOrders(v.id, lost.map((u) => ({ user: u })));
    // Another one holds more than the limit.
    const greedy = String(10 * 2 * PAGE + 1);
    await insertOrders(v.id, Array.from({ length: LIMIT + 1 }, () => ({ user: greedy })));
    // A failed order of a buyer who never held a unit is normal.
    await insertOrders(v.id, [{ user: String(10 * 3 * PAGE + 2), status: 'failed' }]);
    const a = await audit(v.id);
    const { sold, orders } = await truth(v.id);
    assert.deepEqual([a.sold, a.orders], [sold, orders]);
    assert.deepEqual(failing(a).I2, [
      `user ${greedy} holds ${LIMIT + 1} > limit ${LIMIT}`,
      ...[lost[0], lost[1]].map((u) => `user ${u}: quantity row 0, active orders 1`),
      `user ${greedy}: quantity row 0, active orders ${LIMIT + 1}`,
      `user ${lost[2]}: quantity row 0, active orders 1`,
    ]);
    assert.deepEqual(Object.keys(failing(a)), ['I1', 'I2'], 'the stock did not give their units either');
  });

  it('when most orders belong to users without a quantity row, then no statement reads more than a page of them', async () => {
    const v = await soldVoucher();
    await insertOrders(v.id, Array.from({ length: 3 * PAGE }, (_, k) => ({ user: String(10 * BUYERS + 1 + k) })));
    let largest = 0;
    const counting: KyselyPlugin = {
      transformQuery: ({ node }) => node,
      transformResult: async ({ result }) => {
        largest = Math.max(largest, result.rows.length);
        return result;
      },
    };
    const a = await auditVoucher({ ...t.c, db: t.c.db.withPlugin(counting) }, BigInt(v.id), { pageSize: PAGE });
    assert.equal(failing(a!).I2?.length, 10);
    // A page: PAGE orders, and the rest of its last buyer's (five at most here).
    assert.ok(largest > 0 && largest <= PAGE + 4, `a statement returned ${largest} rows`);
  });

  it('when a failed order has no reason, then I3 names it', async () => {
    const v = await soldVoucher();
    const [none] = await insertOrders(v.id, [{ user: user(firstPageEnd()), status: 'failed', failure_reason: null }]);
    const [empty] = await insertOrders(v.id, [{ user: String(10 * BUYERS + 3), status: 'failed', failure_reason: '' }]);
    const a = await audit(v.id);
    assert.deepEqual(failing(a), { I3: [`failed order ${none} has no reason`, `failed order ${empty} has no reason`] });
  });

  it('when an admitted order is not stored, then I3 names it among thousands that are', async () => {
    const v = await soldVoucher();
    const elsewhere = await soldVoucher();
    const admitted = [...v.stored, '999999999999', elsewhere.stored[0]!];
    const a = await audit(v.id, { admitted });
    assert.deepEqual(failing(a), { I3: ['admitted order 999999999999 not stored', `admitted order ${elsewhere.stored[0]} not stored`] });
  });

  it('when a queue voucher admitted out of order, then I7 follows its buyers over the pages', async () => {
    // One order per buyer, as a queue admits: buyer PAGE ends the first page.
    const v = await soldVoucher(Array.from({ length: BUYERS }, (_, k) => ({ user: user(k + 1) })));
    const voucherId = BigInt(v.id);
    await t.c.db.updateTable('vouchers').set({ queue_opens_at: new Date(Date.now() - 120_000) }).where('id', '=', v.id).execute();
    const placeless = user(PAGE + 1);
    const places = Array.from({ length: BUYERS }, (_, k) => [user(k + 1), String(k + 1)]).filter(([u]) => u !== placeless);
    await t.c.redis.hset(t.c.keys.queuePlaces(voucherId), Object.fromEntries(places));
    await insertOrders(v.id, [{ user: user(2 * PAGE), status: 'expired' }]);
    await t.c.redis.zadd(t.c.keys.waitlist(voucherId), 5, '99999');
    const a = await audit(v.id);
    assert.deepEqual(failing(a), {
      I7: [
        `user ${placeless} has an order but no place in the queue`,
        `the place of user ${user(2 * PAGE)} was admitted 2 times`,
        `place 5 (user 99999) still waits, place ${BUYERS} (user ${user(BUYERS)}) was admitted`,
      ],
    });
  });
});
