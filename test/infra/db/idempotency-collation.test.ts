// An Idempotency-Key is compared exactly, case included, on every claim path and in the stored
// unique index, on the database of this pass (MariaDB, or PostgreSQL in scripts/test.sh's last
// pass): `Ab` and `aB` are two purchases, as Redis has always counted them on the seckill path.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUniqueViolation } from '../../../src/infra/db/errors.js';
import { claim, createVoucher, startTestApp, suiteScope } from '../../support/helpers.js';
import { assertInvariants, waitForDrain } from '../../support/invariants.js';

// One buyer sends several claims in a row; the per-buyer token bucket is not what is tested here.
const t = await startTestApp(suiteScope(), 'idem_case', { BUCKET_USER_RATE: '0' });

async function threeClaims(voucherId: string, status: number) {
  const [first, second, again] = [await claim(t, voucherId, 11, { idempotencyKey: 'Ab' }), await claim(t, voucherId, 11, { idempotencyKey: 'aB' }), await claim(t, voucherId, 11, { idempotencyKey: 'Ab' })];
  for (const res of [first, second, again]) assert.equal(res.statusCode, status, res.body);
  return [first, second, again].map((res) => res.json().orderId as string);
}

describe('Idempotency-Key is case-sensitive', () => {
  for (const kind of ['limited', 'common'] as const) {
    it(`when one buyer claims a ${kind} voucher with keys Ab, then aB, then Ab again, then Ab and aB are two orders and the repeat replays the first`, async () => {
      const v = await createVoucher(t, { kind, stock: 5, perUserLimit: 2 });
      const [first, second, again] = await threeClaims(v.id, 201);
      assert.notEqual(first, second);
      assert.equal(again, first);

      const orders = await t.c.db.selectFrom('orders').select(['id', 'idempotency_key']).where('voucher_id', '=', v.id).orderBy('idempotency_key').execute();
      assert.deepEqual(
        orders.map((o) => [o.id, o.idempotency_key]).sort(),
        [[first, 'Ab'], [second, 'aB']].sort(),
      );
      const { stock } = await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow();
      assert.equal(stock, 3);
      const held = await t.c.db.selectFrom('user_quantities').select('quantity').where('voucher_id', '=', v.id).where('user_id', '=', '11').executeTakeFirstOrThrow();
      assert.equal(held.quantity, 2);
    });
  }

  it('when one buyer claims a seckill voucher with keys Ab, then aB, then Ab again, then Ab and aB are two orders and the repeat replays the first', async () => {
    const v = await createVoucher(t, { kind: 'seckill', stock: 5, perUserLimit: 2 });
    const [first, second, again] = await threeClaims(v.id, 202);
    assert.notEqual(first, second);
    assert.equal(again, first);
    await t.c.startWorkers();
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [first!, second!]);
    assert.equal(truth.orders.length, 2);
    assert.equal(truth.dbStock, 3);
  });

  it('when two orders of one buyer and voucher carry keys that differ only in case, then the unique index holds both and still refuses an exact twin', async () => {
    const v = await createVoucher(t, { kind: 'common', stock: 5 });
    const order = (id: string, key: string) =>
      t.c.db
        .insertInto('orders')
        .values({ id, voucher_id: v.id, user_id: '12', quantity: 1, status: 'pending_payment', created_at: new Date(), expires_at: null, idempotency_key: key })
        .execute();
    await order('9001', 'key-X');
    await order('9002', 'KEY-x');
    const twin = await order('9003', 'key-X').then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(isUniqueViolation(twin), `an exact twin is refused: ${String(twin)}`);
  });
});
