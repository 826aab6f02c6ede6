import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { commitmentOf } from '../../src/vouchers/queue-seed.js';
import { createQueueVoucher, join, me, summary } from './support.js';

const t = await startTestApp(suiteScope(), 'queue-join');
const now = () => Date.now();
const body = async (res: Promise<{ statusCode: number; json(): any }>) => {
  const r = await res;
  return { status: r.statusCode, ...r.json() };
};

describe('queue vouchers: joining', () => {
  it('when a buyer joins the open pre-queue, then they hold a place without a position, and joining again returns the same', async () => {
    const v = await createQueueVoucher(t, { opensAt: new Date(now() - 1000), beginAt: new Date(now() + 600_000) });
    assert.deepEqual(v.queue, { opensAt: v.queue.opensAt });
    const first = await body(join(t, v.id, 11));
    assert.deepEqual(first, { status: 202, state: 'prequeue', position: null, ahead: null, etaSeconds: null, orderId: null });
    assert.deepEqual(await body(join(t, v.id, 11)), first);
    assert.deepEqual(await body(me(t, v.id, 11)), { ...first, status: 200 });
    assert.equal((await summary(t, v.id)).entrants, 1, 'one place for a buyer who joined twice');

    const stranger = await body(me(t, v.id, 12));
    assert.deepEqual([stranger.status, stranger.code], [404, 'NOT_IN_QUEUE']);
    // No database write per join: only the queue runner (not started here) copies the pre-queue.
    for (const table of ['queue_entrants', 'queue_prequeue'] as const) {
      assert.equal((await t.c.db.selectFrom(table).select('user_id').where('voucher_id', '=', v.id).execute()).length, 0, table);
    }
  });

  it('when the voucher is read, then it shows its queue, and the queue shows the commitment before any seed', async () => {
    const opensAt = new Date(now() + 60_000);
    const v = await createQueueVoucher(t, { opensAt, beginAt: new Date(now() + 600_000) });
    const read = (await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}` })).json();
    assert.deepEqual(read.queue, { opensAt: opensAt.toISOString() });
    const q = await summary(t, v.id);
    assert.match(q.commitment, /^[0-9a-f]{64}$/);
    assert.deepEqual([q.seed, q.drawnAt, q.entrants, q.admitted, q.closed], [null, null, 0, 0, 0]);
    const stored = await t.c.db.selectFrom('queue_draws').select('seed').where('voucher_id', '=', v.id).executeTakeFirstOrThrow();
    assert.equal(commitmentOf(stored.seed), q.commitment, 'the commitment is the hash of the stored seed');
  });

  it('when a buyer joins before opensAt or after the end, then NOT_STARTED or ENDED, and nothing is joined', async () => {
    const early = await createQueueVoucher(t, { opensAt: new Date(now() + 60_000), beginAt: new Date(now() + 600_000) });
    const tooEarly = await body(join(t, early.id, 21));
    assert.deepEqual([tooEarly.status, tooEarly.code], [409, 'NOT_STARTED']);
    assert.equal((await summary(t, early.id)).entrants, 0);

    const over = await createQueueVoucher(t, { opensAt: new Date(now() - 3_600_000), beginAt: new Date(now() - 1_800_000), endAt: new Date(now() - 60_000) });
    const tooLate = await body(join(t, over.id, 21));
    assert.deepEqual([tooLate.status, tooLate.code], [409, 'ENDED']);
  });

  it('when a buyer claims a queue voucher directly, then QUEUE_REQUIRED and no unit is taken', async () => {
    const v = await createQueueVoucher(t, { opensAt: new Date(now() - 3_600_000), beginAt: new Date(now() - 60_000), stock: 3 });
    const res = await claim(t, v.id, 31);
    assert.deepEqual([res.statusCode, res.json().code], [409, 'QUEUE_REQUIRED']);
    assert.equal(await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id)), 'stock'), '3');
  });

  it('when the queue routes are asked of a voucher without a queue, then QUEUE_NOT_OFFERED', async () => {
    const v = await createVoucher(t);
    const res = await body(join(t, v.id, 41));
    assert.deepEqual([res.status, res.code], [404, 'QUEUE_NOT_OFFERED']);
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/vouchers/${v.id}` })).json().queue, null);
  });

  it('when a queue is asked for where it cannot work, then 400 and no voucher', async () => {
    const opensAt = new Date(now() + 1000);
    const beginAt = new Date(now() + 60_000);
    const bad = [
      { kind: 'limited', opensAt, beginAt },
      { opensAt: beginAt, beginAt },
      { opensAt, beginAt, segments: 2 },
      { opensAt, beginAt, waitlist: true },
    ];
    const before = await t.c.db.selectFrom('vouchers').select('id').execute();
    for (const spec of bad) {
      await assert.rejects(createQueueVoucher(t, spec), /400/, JSON.stringify(spec));
    }
    assert.equal((await t.c.db.selectFrom('vouchers').select('id').execute()).length, before.length);
  });
});
