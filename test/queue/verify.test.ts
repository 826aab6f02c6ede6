import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { range, startTestApp, suiteScope } from '../support/helpers.js';
import { runSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';
import { drawOrder, rankOf, ranker } from '../../src/queue/draw-order.js';
import { newSeed } from '../../src/vouchers/queue-seed.js';
import { readPublishedDraw, verifyDraw } from '../../src/queue/verify.js';
import { createQueueVoucher, publicGet, summary } from './support.js';

const t = await startTestApp(suiteScope(), 'queue-verify');
await t.c.startQueue();
const address = await t.app.listen({ host: '127.0.0.1', port: 0 });

const verifyCli = (voucherId: string) => runSeckill(['draw', 'verify', voucherId, '--url', address], { env: t.env });

describe('queue vouchers: seckill draw verify', () => {
  it("when the draw's fast ranks are compared with node's HMAC, then they agree", () => {
    const seed = newSeed();
    const rank = ranker(seed);
    for (const id of ['1', '42', '1000001', '9223372036854775807']) assert.equal(rank(id), rankOf(seed, id));
  });

  it('when a real draw is checked (some entrants joined in its last seconds), then it matches; when one published entrant or the seed is altered, then it does not', async () => {
    const beginAt = new Date(Date.now() + 3_500);
    const v = await createQueueVoucher(t, { opensAt: new Date(Date.now() - 1000), beginAt, stock: 7 });
    const users = range(5_000, 300);
    const joinAll = (list: number[]) => Promise.all(list.map((u) => t.c.queue.join(BigInt(v.id), BigInt(u))));
    await joinAll(users.slice(0, 250));
    // The draw ranks the entrants so far 3 s before the start; these join after that, before the start.
    await new Promise((r) => setTimeout(r, beginAt.getTime() - 700 - Date.now()));
    await joinAll(users.slice(250, 299));
    // One more with a join time from before the others (a clock set back): the draw must count it in too.
    await t.c.redis.zadd(t.c.keys.queueEntrants(BigInt(v.id)), 1, String(users[299]));
    assert.ok(Date.now() < beginAt.getTime(), 'every entrant joined before the start');
    const published = await waitFor('the draw published', async () => (await summary(t, v.id)).seed && summary(t, v.id));
    assert.equal(published.entrants, users.length);
    assert.deepEqual(verifyDraw(await readPublishedDraw(publicGet(t), v.id)), { ok: true, problems: [] });
    const good = await verifyCli(v.id);
    assert.equal(good.code, 0, good.stdout + good.stderr);
    assert.match(good.stdout, /the draw matches/);

    // One published entrant replaced by someone who never joined, whose rank under this seed is not
    // that place's (one in ~150 ids would rank there by chance, and the swap would go unseen).
    const third = drawOrder(published.seed, users.map(String))[2]!;
    const others = users.map(String).filter((u) => u !== third);
    const impostor = ['77777777', '77777778', '77777779'].find((u) => drawOrder(published.seed, [...others, u])[2] !== u)!;
    const entrants = () => t.c.db.updateTable('queue_entrants').where('voucher_id', '=', v.id);
    await entrants().set({ user_id: impostor }).where('user_id', '=', third).execute();
    const swapped = await verifyCli(v.id);
    assert.equal(swapped.code, 1, swapped.stdout + swapped.stderr);
    assert.match(swapped.stdout, /entrants are not at the place the seed gives them/);
    await entrants().set({ user_id: third }).where('user_id', '=', impostor).execute();
    assert.equal((await verifyCli(v.id)).code, 0);

    // Another seed published: it is not the one committed to.
    const other = newSeed();
    await t.c.redis.hset(t.c.keys.queue(BigInt(v.id)), 'seed', other);
    const reseeded = verifyDraw(await readPublishedDraw(publicGet(t), v.id));
    assert.equal(reseeded.ok, false);
    assert.match(reseeded.problems[0]!, /the commitment was/);
    assert.equal((await verifyCli(v.id)).code, 1);
  });
});
