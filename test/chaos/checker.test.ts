// The chaos checker on hand-made histories and store snapshots: a clean sale reports nothing, and
// each kind of anomaly, planted alone, is reported alone.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ANOMALIES, type Anomaly, check, type CheckOptions, formatLine, verdict } from '../../bench/chaos/checker.js';
import { type ClaimAnswer, type ClaimOp, createRecorder, type HistoryOp, outcomeOf, type ReadOp, readHistory } from '../../bench/chaos/history.js';
import type { StoredOrder, Stores } from '../../bench/chaos/stores.js';

const V = '100';
const OPTIONS: CheckOptions = { soldOutGraceMs: 100 };
let nextClaim = 0;

function claim(userId: string, at: number, answer: Partial<ClaimAnswer> = {}): ClaimOp {
  const c = { id: `c${++nextClaim}`, at, voucherId: V, userId, quantity: 1, idempotencyKey: null, status: null, code: null, orderId: null, doneAt: at + 20, ...answer };
  return { op: 'claim', ...c, outcome: outcomeOf(c.status, c.orderId) };
}
const ack = (userId: string, at: number, orderId: string, more: Partial<ClaimAnswer> = {}) => claim(userId, at, { status: 202, orderId, ...more });
const refused = (userId: string, at: number, status: number, code: string, more: Partial<ClaimAnswer> = {}) => claim(userId, at, { status, code, ...more });
const read = (orderId: string, userId: string, at: number, orderStatus: string): ReadOp => ({ op: 'read', at, orderId, userId, status: 200, orderStatus, code: null });

function order(id: string, userId: string, status = 'pending_payment', more: Partial<StoredOrder> = {}): StoredOrder {
  return { id, voucherId: V, userId, quantity: 1, status, failureReason: status === 'failed' ? 'poison' : null, idempotencyKey: null, updatedAt: 1000, ...more };
}

/** Both stores as they are when nothing went wrong: stock, held units and Redis follow from the orders. */
function consistentStores(orders: StoredOrder[], initialStock = 10, perUserLimit = 2): Stores {
  const held = new Map<string, number>();
  for (const o of orders) if (o.status === 'pending_payment' || o.status === 'paid') held.set(o.userId, (held.get(o.userId) ?? 0) + o.quantity);
  const stock = initialStock - [...held.values()].reduce((n, q) => n + q, 0);
  return {
    vouchers: [{ id: V, kind: 'seckill', initialStock, stock, perUserLimit, segmentShards: null }],
    orders,
    userQuantities: [...held].map(([userId, quantity]) => ({ voucherId: V, userId, quantity })),
    redis: [{ voucherId: V, stock, buyers: Object.fromEntries(held), inflight: 0 }],
  };
}

/**
 * A small sale without anomalies, with the cases that must not be taken for one: a timed-out
 * claim whose retry (same key) was acknowledged, a timed-out claim that was stored and one that
 * was not, a 503 that was not stored, an order cancelled and its unit claimed again, a SOLD_OUT
 * excused by that release, a waitlisted SOLD_OUT promoted, and reads that saw `processing` first.
 */
function cleanSale(): { history: HistoryOp[]; orders: StoredOrder[] } {
  const history: HistoryOp[] = [
    claim('1', 1000, { idempotencyKey: 'k1' }),
    ack('1', 1100, 'o1', { idempotencyKey: 'k1' }),
    ack('2', 1000, 'o2'),
    claim('3', 1000),
    claim('4', 1000),
    refused('5', 1000, 503, 'UNAVAILABLE'),
    ack('6', 2000, 'o6'),
    refused('8', 5000, 409, 'SOLD_OUT'),
    ack('6', 6000, 'o7'),
    refused('9', 7000, 409, 'SOLD_OUT', { waitlisted: true }),
    read('o1', '1', 1200, 'processing'),
    read('o1', '1', 9000, 'pending_payment'),
  ];
  const orders = [
    order('o1', '1'),
    order('o2', '2', 'paid'),
    order('o3', '3'),
    order('o6', '6', 'cancelled', { updatedAt: 5500 }),
    order('o7', '6'),
    order('o9', '9'),
  ];
  return { history, orders };
}

const nonZero = (counts: Record<Anomaly, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));

function reported(history: HistoryOp[], stores: Stores, options = OPTIONS) {
  const report = check(history, stores, options);
  assert.deepEqual(report.vouchers.map((v) => v.voucherId), [V]);
  assert.deepEqual(report.total.counts, report.vouchers[0]!.counts, 'one voucher: the total is its counts');
  return { report, found: nonZero(report.total.counts) };
}

describe('the chaos checker', () => {
  it('reports nothing for a clean sale, and tallies what happened', () => {
    const { history, orders } = cleanSale();
    const { report, found } = reported(history, consistentStores(orders));
    assert.deepEqual(found, {});
    assert.deepEqual(report.total.tally, { claims: 10, acked: 4, unknown: 3, failed: 3, soldOut: 2, stored: 6, sold: 5 });
    assert.equal(report.redisChecked, true);
    assert.match(formatLine('partition/replica', report), /^partition\/replica: 10 claims \(4 acked, 3 unknown, 3 failed, 2 sold out\), 6 stored, 5 units sold — clean$/);
  });

  const cases: { name: string; expect: Partial<Record<Anomaly, number>>; plant(sale: ReturnType<typeof cleanSale>): Stores | void }[] = [
    {
      name: 'an acknowledged order that was never stored is acked-lost',
      expect: { 'acked-lost': 1 },
      plant: (sale) => void sale.orders.splice(sale.orders.findIndex((o) => o.id === 'o2'), 1),
    },
    {
      name: 'an acknowledged order stored failed is acked-failed',
      expect: { 'acked-failed': 1 },
      plant: (sale) => void (sale.orders.find((o) => o.id === 'o2')!.status = 'failed'),
    },
    {
      name: 'a timed-out claim stored again beside its acknowledged retry is unknown-twice',
      expect: { 'unknown-twice': 1 },
      plant: (sale) => void sale.orders.push(order('o1b', '1')),
    },
    {
      name: 'two timed-out claims with one key stored as two orders are unknown-twice',
      expect: { 'unknown-twice': 1 },
      plant: (sale) => {
        sale.history.push(claim('10', 1000, { idempotencyKey: 'k10' }), claim('10', 1200, { idempotencyKey: 'k10' }));
        sale.orders.push(order('o10', '10'), order('o10b', '10'));
      },
    },
    {
      name: 'an order stored for a claim answered 503 is refused-but-stored',
      expect: { 'refused-but-stored': 1 },
      plant: (sale) => void sale.orders.push(order('o5', '5')),
    },
    {
      name: 'an order stored under the id a refusal carried is refused-but-stored',
      expect: { 'refused-but-stored': 1 },
      plant: (sale) => {
        sale.history.push(refused('11', 1000, 503, 'UNAVAILABLE', { orderId: 'o11' }));
        sale.orders.push(order('o11', '11'));
      },
    },
    {
      name: 'an order no claim of the history explains is unclaimed',
      expect: { unclaimed: 1 },
      plant: (sale) => void sale.orders.push(order('o12', '12')),
    },
    {
      name: 'an order id stored twice is a duplicate',
      expect: { duplicates: 1 },
      plant: (sale) => {
        const stores = consistentStores(sale.orders);
        return { ...stores, orders: [...stores.orders, order('o2', '2', 'paid')] };
      },
    },
    {
      name: 'an order id acknowledged to two buyers is ids-twice',
      expect: { 'ids-twice': 1 },
      plant: (sale) => void sale.history.push(ack('13', 3000, 'o2')),
    },
    {
      name: 'a replay of an acknowledged claim answered with another order id is replay-mismatch',
      expect: { 'replay-mismatch': 1 },
      plant: (sale) => {
        sale.history.push(ack('1', 1300, 'o1x', { idempotencyKey: 'k1' }));
        sale.orders.push(order('o1x', '1'));
      },
    },
    {
      name: 'units sold beyond the initial stock are oversold',
      expect: { oversold: 1 },
      plant: (sale) => {
        const stores = consistentStores(sale.orders, 4);
        assert.equal(stores.vouchers[0]!.stock, -1);
        return stores;
      },
    },
    {
      name: 'a database stock that does not match the orders is stock-drift',
      expect: { 'stock-drift': 1, 'redis-stock-drift': 1 },
      plant: (sale) => {
        const stores = consistentStores(sale.orders);
        stores.vouchers[0]!.stock -= 1;
        return stores;
      },
    },
    {
      name: 'a buyer holding more than the per-user limit is a limit-breach',
      expect: { 'limit-breach': 1 },
      plant: (sale) => {
        sale.history.push(claim('2', 3000, { quantity: 2 }));
        sale.orders.push(order('o2b', '2', 'pending_payment', { quantity: 2 }));
      },
    },
    {
      name: 'a buyer acknowledged beyond the limit (the extra order then failed) is limit-breach-acked',
      expect: { 'limit-breach-acked': 1, 'acked-failed': 1 },
      plant: (sale) => {
        sale.history.push(ack('2', 3000, 'o2b', { quantity: 2 }));
        sale.orders.push(order('o2b', '2', 'failed', { quantity: 2, updatedAt: 3010 }));
      },
    },
    {
      name: 'a SOLD_OUT that a later acknowledgement contradicts, with no release in between, is a false sold-out',
      expect: { 'false-sold-out': 1 },
      // The cancellation came before the SOLD_OUT by more than the grace: it excuses nothing.
      plant: (sale) => void (sale.orders.find((o) => o.id === 'o6')!.updatedAt = 4000),
    },
    {
      name: 'an acknowledged order whose last read still says processing is processing-forever',
      expect: { 'processing-forever': 1 },
      plant: (sale) => void sale.history.push(read('o1', '1', 9500, 'processing')),
    },
    {
      name: 'a held-units row that does not match the orders is quota-drift',
      expect: { 'quota-drift': 1 },
      plant: (sale) => {
        const stores = consistentStores(sale.orders);
        stores.userQuantities[0]!.quantity += 1;
        return stores;
      },
    },
    {
      name: 'Redis disagreeing with the database after the drain is redis drift, and records left are inflight-left',
      expect: { 'redis-stock-drift': 2, 'redis-buyer-drift': 1, 'inflight-left': 1 },
      plant: (sale) => {
        const stores = consistentStores(sale.orders);
        const redis = stores.redis![0]!;
        Object.assign(redis, { stock: redis.stock! - 2, buyers: { ...redis.buyers, '2': 0 }, inflight: 1 });
        return stores;
      },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const sale = cleanSale();
      const stores = c.plant(sale) ?? consistentStores(sale.orders);
      const { report, found } = reported(sale.history, stores);
      assert.deepEqual(found, c.expect);
      for (const anomaly of Object.keys(c.expect) as Anomaly[]) assert.ok(report.total.examples[anomaly]?.length, `an example of ${anomaly}`);
    });
  }

  it('judges a SOLD_OUT against the grace, the release lag and the acknowledgement’s quantity and first claim', () => {
    const base = cleanSale();
    base.orders.find((o) => o.id === 'o6')!.updatedAt = 4000;
    const falseSoldOuts = (history: HistoryOp[], options: CheckOptions) => check(history, consistentStores(base.orders), options).total.counts['false-sold-out'];
    assert.equal(falseSoldOuts(base.history, OPTIONS), 1);
    assert.equal(falseSoldOuts(base.history, { soldOutGraceMs: 1001 }), 0, 'the release lies within the grace');
    assert.equal(falseSoldOuts(base.history, { soldOutGraceMs: 100, releaseLagMs: 901 }), 0, 'the release may have reached Redis within the grace');
    // Evidence that does not count: a larger SOLD_OUT than any later acknowledgement, and a replay of an admission older than the SOLD_OUT.
    const history = base.history.map((op) => (op.op === 'claim' && op.code === 'SOLD_OUT' && !op.waitlisted ? { ...op, quantity: 2 } : op));
    assert.equal(falseSoldOuts(history, OPTIONS), 0);
    const replay = cleanSale().history.filter((op) => !(op.op === 'claim' && op.orderId === 'o7'));
    replay.push(claim('6', 4000, { idempotencyKey: 'k7' }), ack('6', 6000, 'o7', { idempotencyKey: 'k7' }));
    assert.equal(falseSoldOuts(replay, OPTIONS), 0);
  });

  it('attributes orders that store their Idempotency-Key (limited, common) by the key alone', () => {
    const { history, orders } = cleanSale();
    history.push(claim('20', 1000, { idempotencyKey: 'a' }), refused('21', 1000, 503, 'UNAVAILABLE', { idempotencyKey: 'b' }), claim('22', 1000));
    orders.push(order('o20', '20', 'pending_payment', { idempotencyKey: 'a' }));
    assert.deepEqual(reported(history, consistentStores(orders)).found, {});
    // The refused key stored; a key the history never sent, although the buyer has an unknown claim.
    orders.push(order('o21', '21', 'pending_payment', { idempotencyKey: 'b' }), order('o22', '22', 'pending_payment', { idempotencyKey: 'z' }));
    assert.deepEqual(reported(history, consistentStores(orders)).found, { 'refused-but-stored': 1, unclaimed: 1 });
  });

  it('reads no Redis counts when Redis was not read', () => {
    const { history, orders } = cleanSale();
    const { report } = reported(history, { ...consistentStores(orders), redis: null });
    assert.equal(report.redisChecked, false);
    assert.match(formatLine('x', report), /Redis not read — clean$/);
  });

  it('gives a verdict against a promise, naming each broken count', () => {
    const sale = cleanSale();
    sale.orders.splice(sale.orders.findIndex((o) => o.id === 'o2'), 1);
    sale.orders.push(order('o5', '5'));
    const report = check(sale.history, consistentStores(sale.orders), OPTIONS);
    assert.deepEqual(verdict(report, ['oversold', 'duplicates', 'ids-twice']), { ok: true, broken: [] });
    assert.deepEqual(verdict(report, ['acked-lost', 'acked-failed', 'refused-but-stored']), {
      ok: false,
      broken: [
        { anomaly: 'acked-lost', count: 1 },
        { anomaly: 'refused-but-stored', count: 1 },
      ],
    });
    assert.match(formatLine('kill/memory', report), /— acked-lost 1, refused-but-stored 1$/);
    assert.equal(ANOMALIES.length, new Set(ANOMALIES).size);
  });
});

describe('the history recorder', () => {
  it('derives each claim’s outcome and writes the history as JSON lines that read back the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chaos-history-'));
    try {
      const recorder = createRecorder(join(dir, 'history.jsonl'));
      const base = { at: 1, voucherId: V, userId: '1', quantity: 1, idempotencyKey: 'k', code: null, doneAt: 2 };
      const outcomes = [
        recorder.recordClaim({ ...base, id: 'a', status: 202, orderId: 'o1' }),
        recorder.recordClaim({ ...base, id: 'b', status: 201, orderId: null }),
        recorder.recordClaim({ ...base, id: 'c', status: 503, code: 'UNAVAILABLE', orderId: null }),
        recorder.recordClaim({ ...base, id: 'd', status: null, orderId: null }),
      ].map((c) => c.outcome);
      assert.deepEqual(outcomes, ['ok', 'unknown', 'fail', 'unknown']);
      recorder.recordRead({ at: 3, orderId: 'o1', userId: '1', status: 200, orderStatus: 'paid', code: null });
      await recorder.close();
      await recorder.close();
      assert.throws(() => recorder.recordRead({ at: 4, orderId: 'o1', userId: '1', status: 200, orderStatus: 'paid', code: null }), /closed/);
      assert.deepEqual(readHistory(join(dir, 'history.jsonl')), recorder.history());
      assert.equal(recorder.history().length, 5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
