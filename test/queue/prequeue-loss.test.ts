// A queue voucher's pre-queue lives in Redis until the draw; the runner copies it to the database
// while it is open. Redis forgetting it (here: every key of the voucher deleted, as a restart
// without persistence would) must not forget the buyers it had answered and copied.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { range, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { waitFor } from '../../support/wait.js';
import { waitForDrain } from '../support/invariants.js';
import { drawOrder } from '../../src/queue/draw-order.js';
import { readPublishedDraw, verifyDraw } from '../../src/queue/verify.js';
import { createQueueVoucher, join, me, publicGet, summary } from './support.js';

const t = await startTestApp(suiteScope(), 'queue-lost');
await t.c.startPipeline();
const runner = await t.c.startQueue();

const ENTRANTS = 300;
const STOCK = 20;

const copied = async (voucherId: string) => (await t.c.db.selectFrom('queue_prequeue').select('user_id').where('voucher_id', '=', voucherId).execute()).map((r) => r.user_id);

/** A queue voucher beginning at `beginAt`, its pre-queue joined by ENTRANTS users from `firstUser` and copied to the database. */
async function copiedPrequeue(beginAt: Date, firstUser: number) {
  const v = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 1000), beginAt, stock: STOCK, paymentTimeoutSeconds: 600 });
  const id = BigInt(v.id);
  const users = range(firstUser, ENTRANTS).map(String);
  await Promise.all(users.map((u) => t.c.queue.join(id, BigInt(u))));
  await waitFor('the pre-queue copied', async () => (await copied(v.id)).length === ENTRANTS);
  return { v, id, users };
}

/** The draw, published, matches its seed and its entrants; the first places hold the orders, stock is sold out in both stores, and the audit passes. */
async function assertDrawn(app: TestApp, voucherId: string, entrants: string[]) {
  const published = await waitFor('the draw published', async () => (await summary(app, voucherId)).seed && summary(app, voucherId), 15_000);
  assert.deepEqual([published.entrants, published.drawAdmitted], [entrants.length, STOCK]);
  assert.deepEqual(verifyDraw(await readPublishedDraw(publicGet(app), voucherId)), { ok: true, problems: [] });
  const listed = await app.c.db.selectFrom('queue_entrants').select('user_id').where('voucher_id', '=', voucherId).execute();
  assert.deepEqual(listed.map((r) => r.user_id).sort(), [...entrants].sort(), 'the published entrants are everyone who joined');
  assert.deepEqual(await copied(voucherId), [], "the entrant list replaced the pre-queue's copy");

  await waitForDrain(app.c, voucherId);
  const orders = await app.c.db.selectFrom('orders').select('user_id').where('voucher_id', '=', voucherId).execute();
  assert.deepEqual(orders.map((o) => o.user_id).sort(), drawOrder(published.seed, entrants).slice(0, STOCK).sort());
  assert.equal((await app.c.db.selectFrom('vouchers').select('stock').where('id', '=', voucherId).executeTakeFirstOrThrow()).stock, 0);
  assert.equal(await app.c.redis.hget(app.c.keys.voucher(BigInt(voucherId)), 'stock'), '0');
  const audit = await app.c.audit(BigInt(voucherId), { drained: true });
  assert.deepEqual(audit?.checks.filter((c) => !c.ok), []);
  assert.equal(audit?.checks.find((c) => c.id === 'I7')?.ok, true);
}

describe('queue vouchers: a pre-queue that Redis forgets', () => {
  it('when Redis loses every key of the voucher after the copy, then the copied buyers are given back before the draw and drawn; one who joined after the copy reads NOT_IN_QUEUE and joins again', async () => {
    // The draw starts 3 s before beginAt: the runner's looks until then have 4 s to copy and give back.
    const beginAt = new Date(Date.now() + 7_000);
    const { v, id, users } = await copiedPrequeue(beginAt, 200_000);

    // One more join while the runner cannot copy (its lock held here, and lost with the rest), then the loss.
    await t.c.redis.set(t.c.keys.queueLock(id), 'test', 'PX', 5_000, 'NX');
    const unlucky = 299_999;
    assert.equal((await join(t, v.id, unlucky)).statusCode, 202);
    await deleteKeys(t.c.redis, `${t.c.keys.prefix}:*:v:${v.id}*`);
    await runner.look(); // its next look now rather than within a second

    // The copied buyers are in the pre-queue again within the runner's next look; the other is not.
    const restored = await waitFor('a copied buyer back in the pre-queue', async () => {
      const res = await me(t, v.id, Number(users[0]));
      return res.statusCode === 200 && res.json();
    });
    assert.equal(restored.state, 'prequeue');
    assert.ok(Date.now() < beginAt.getTime() - 3_000, 'given back by the runner before the draw began');
    assert.equal((await summary(t, v.id)).entrants, ENTRANTS);
    const lost = await me(t, v.id, unlucky);
    assert.deepEqual([lost.statusCode, lost.json().code], [404, 'NOT_IN_QUEUE']);
    const again = await join(t, v.id, unlucky);
    assert.deepEqual([again.statusCode, again.json().state], [202, 'prequeue']);

    // The voucher's own state was lost too: the draw rebuilds it from the database.
    await assertDrawn(t, v.id, [...users, String(unlucky)]);
  });

  it('when the database holds copied entrants the Redis pre-queue lacks at the draw, then the draw includes them; a join while the draw waits for the start is copied before it', async () => {
    const beginAt = new Date(Date.now() + 5_000);
    const { v, id, users } = await copiedPrequeue(beginAt, 300_000);
    // Lost from Redis after the copy, the copy's cursor kept: only the draw can notice.
    const gone = users.slice(0, 100);
    assert.equal(await t.c.redis.zrem(t.c.keys.queueEntrants(id), ...gone), gone.length);
    assert.equal((await summary(t, v.id)).entrants, ENTRANTS - gone.length);

    // The draw began 3 s before the start (the runner copies no more): it copies meanwhile itself.
    await new Promise((r) => setTimeout(r, beginAt.getTime() - 1_800 - Date.now()));
    const last = '399999';
    assert.equal((await join(t, v.id, Number(last))).statusCode, 202);
    await waitFor('the last join copied', async () => (await copied(v.id)).includes(last), 5_000);
    assert.ok(Date.now() < beginAt.getTime(), 'copied before the start');

    await assertDrawn(t, v.id, [...users, last]);
    const standing = (await me(t, v.id, Number(gone[0]))).json();
    assert.equal(typeof standing.position, 'number', 'a buyer given back has a place');
  });
});
