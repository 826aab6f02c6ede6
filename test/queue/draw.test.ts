import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { waitForDrain } from '../support/invariants.js';
import { drawOrder } from '../../src/queue/draw-order.js';
import { readPublishedDraw, verifyDraw } from '../../src/queue/verify.js';
import type { QueueEvent, UserEvent } from '../../src/orders/order-pubsub.js';
import { createQueueVoucher, join, me, publicGet, summary } from './support.js';

const t = await startTestApp(suiteScope(), 'queue-draw', { EXPIRY_POLL_MS: '100' });
await t.c.startPipeline();
await t.c.startQueue();

const ENTRANTS = 2_000;
const STOCK = 40;
const FIRST_USER = 100_000;

const orders = (voucherId: string) => t.c.db.selectFrom('orders').select(['id', 'user_id', 'status', 'created_at']).where('voucher_id', '=', voucherId).execute();

describe('queue vouchers: the draw', () => {
  it('when the sale starts, then the first places are admitted in the order of the seed, the rest wait in it, and units that come back go to the next places', async () => {
    const beginAt = new Date(Date.now() + 4_000);
    const v = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 1000), beginAt, stock: STOCK, paymentTimeoutSeconds: 600 });
    const users = range(FIRST_USER, ENTRANTS);
    // Through the join use case (the route's, without HTTP): 2,000 joins fit before the start on a busy box.
    const answers = await Promise.all(users.map((u) => t.c.queue.join(BigInt(v.id), BigInt(u))));
    assert.ok(answers.every((a) => a.state === 'prequeue'));
    assert.ok(Date.now() < beginAt.getTime(), 'every entrant joined before the start');
    const heard: QueueEvent[] = [];
    const watched = [users[0]!, users[1]!, users[2]!];
    const stops = await Promise.all(watched.map((u) => t.c.pubsub.subscribeUser(String(u), (e: UserEvent) => e.type === 'queue' && heard.push(e))));

    const published = await waitFor('the draw published', async () => (await summary(t, v.id)).seed && summary(t, v.id), 15_000);
    const order = drawOrder(published.seed, users.map(String));
    assert.deepEqual([published.entrants, published.drawAdmitted, published.admitted], [ENTRANTS, STOCK, STOCK]);

    // The first places, and only they, have orders; stored once each; nothing oversold.
    await waitForDrain(t.c, v.id);
    const stored = await orders(v.id);
    assert.deepEqual(stored.map((o) => o.user_id).sort(), order.slice(0, STOCK).sort());
    assert.equal(new Set(stored.map((o) => o.user_id)).size, STOCK, 'no place admitted twice');
    assert.equal((await t.c.db.selectFrom('vouchers').select('stock').where('id', '=', v.id).executeTakeFirstOrThrow()).stock, 0);
    assert.equal(await t.c.redis.hget(t.c.keys.voucher(BigInt(v.id)), 'stock'), '0');
    const latest = Math.max(...stored.map((o) => o.created_at.getTime()));
    assert.ok(latest - beginAt.getTime() <= 2_000, `the first places admitted ${latest - beginAt.getTime()} ms after the start`);

    // Each buyer's standing follows the order; the listeners heard theirs.
    for (const place of [1, STOCK, STOCK + 1, STOCK + 2, ENTRANTS]) {
      const s = (await me(t, v.id, Number(order[place - 1]))).json();
      if (place <= STOCK) assert.deepEqual([s.state, s.position, s.ahead, typeof s.orderId], ['admitted', place, 0, 'string']);
      else assert.deepEqual([s.state, s.position, s.ahead, s.orderId], ['waiting', place, place - STOCK - 1, null]);
    }
    await waitFor('the watched buyers heard their places', () => heard.length === watched.length);
    for (const e of heard) assert.equal(e.position, order.indexOf(e.userId) + 1);
    stops.forEach((stop) => stop());

    // A buyer who joins after the start is placed after every drawn entrant.
    const late = await join(t, v.id, 999_999);
    assert.deepEqual([late.json().state, late.json().position, late.json().ahead], ['waiting', ENTRANTS + 1, ENTRANTS - STOCK]);

    // The draw re-checks from what was published.
    assert.deepEqual(verifyDraw(await readPublishedDraw(publicGet(t), v.id)), { ok: true, problems: [] });

    // A cancelled unit goes to the next place within a second.
    const firstOrder = stored.find((o) => o.user_id === order[0])!;
    const cancelledAt = performance.now();
    assert.equal((await orderAction(t, 'cancel', firstOrder.id, Number(order[0]))).statusCode, 200);
    const next = Number(order[STOCK]);
    const promoted = await waitFor('the next place admitted', async () => {
      const s = (await me(t, v.id, next)).json();
      return s.state === 'admitted' && s;
    });
    assert.ok(performance.now() - cancelledAt <= 1_000, `admitted ${Math.round(performance.now() - cancelledAt)} ms after the cancel`);
    assert.equal(promoted.position, STOCK + 1);
    const after = (await me(t, v.id, Number(order[STOCK + 1]))).json();
    assert.deepEqual([after.state, after.ahead], ['waiting', 0]);
    assert.equal(typeof after.etaSeconds, 'number', 'an ETA once a place was admitted after the draw');

    // Every unit paid: every waiting place closed within a second, and the queue takes nobody new.
    await waitForDrain(t.c, v.id);
    const active = (await orders(v.id)).filter((o) => o.status === 'pending_payment');
    assert.equal(active.length, STOCK);
    for (const o of active.slice(0, -1)) assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200);
    assert.equal((await me(t, v.id, Number(order[STOCK + 1]))).json().state, 'waiting', 'a unit can still come back');
    const last = active.at(-1)!;
    assert.equal((await orderAction(t, 'pay', last.id, Number(last.user_id))).statusCode, 200);
    const paidAt = performance.now();
    await waitFor('every waiting place closed', async () => {
      const states = await Promise.all([STOCK + 2, ENTRANTS].map(async (p) => (await me(t, v.id, Number(order[p - 1]))).json().state));
      return states.every((s) => s === 'closed');
    });
    assert.ok(performance.now() - paidAt <= 1_000, `closed ${Math.round(performance.now() - paidAt)} ms after the last payment`);
    const closed = await summary(t, v.id);
    assert.equal(closed.closed, ENTRANTS + 1 - STOCK - 1);
    const refused = await join(t, v.id, 888_888);
    assert.deepEqual([refused.statusCode, refused.json().code], [409, 'SOLD_OUT']);

    // The audit: admissions followed the queue's order, each place once; a place put back ahead is caught.
    const audit = await t.c.audit(BigInt(v.id), { drained: true });
    assert.deepEqual(audit?.checks.filter((c) => !c.ok), []);
    assert.equal(audit?.checks.find((c) => c.id === 'I7')?.ok, true);
    const waiter = order[STOCK + 2]!;
    await t.c.redis.zadd(t.c.keys.waitlist(BigInt(v.id)), 2, waiter);
    const caught = (await t.c.audit(BigInt(v.id)))?.checks.find((c) => c.id === 'I7');
    assert.equal(caught?.ok, false);
    assert.match(caught!.problems[0]!, new RegExp(`place 2 \\(user ${waiter}\\) still waits`));
  });
});
