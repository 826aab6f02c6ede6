// Sold-out fast path: an instance that has seen a voucher sold out answers its claims from memory,
// with no Redis command at all (counted with MONITOR on a separate connection), still gives a
// buyer's retry its order back, tells waiting users they are waiting, and sells units that come
// back within a second: at once when the release is announced, by the flag's expiry when not.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { Container } from '../../src/container.js';
import { createScripts } from '../../src/infra/redis/scripts/index.js';
import { createReleases } from '../../src/lifecycle/releases.js';
import { claim, createVoucher, orderAction, REDIS_URL, startSecondInstance, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

// Long enough that only an announcement (pub/sub) can clear a flag within a second.
const LONG_FLAG_MS = '10000';

// a runs the order pipeline; its cancels give units back (and announce them). b is a second API
// instance on the same data; short a third one whose flags expire after the default 500 ms.
const a = await startTestApp(suiteScope(), 'soldout', { SOLD_OUT_CACHE_MS: LONG_FLAG_MS, WAITLIST_MAX: '2' });
const b = await startSecondInstance(suiteScope(), a);
const short = await startSecondInstance(suiteScope(), a, { SOLD_OUT_CACHE_MS: '500' });
await a.c.startPipeline();

let nextUser = 10_000;

/** Claims answered from memory by this instance so far. */
async function cachedAnswers(c: Container): Promise<number> {
  return (await c.metrics.claims.get()).values.find((v) => v.labels.outcome === 'sold_out_cached')?.value ?? 0;
}

/** Sends claims from new buyers to `t` until one is answered from memory. */
async function untilCached(t: TestApp, voucherId: string, options: { idempotencyKey?: string } = {}) {
  await waitFor('a sold-out answer from memory', async () => {
    const before = await cachedAnswers(t.c);
    const res = await claim(t, voucherId, nextUser++, options);
    assert.equal(res.json().code, 'SOLD_OUT', res.body);
    return (await cachedAnswers(t.c)) > before;
  });
}

/** A one-unit voucher bought by `user` (the order stored), whose sold-out flag `instance` has cached. */
async function boughtOutCachedBy(instance: TestApp, user: number) {
  const v = await createVoucher(a, { stock: 1 });
  const bought = await claim(a, v.id, user);
  assert.equal(bought.statusCode, 202);
  await waitForDrain(a.c, v.id);
  await untilCached(instance, v.id);
  return { v, bought };
}

/**
 * MONITOR on a raw connection of its own, calling `onLine` with each command line Redis reports
 * (`+<time> [<db> <client address, or lua>] "command" "arg" ...`). Resolves once monitoring.
 * (ioredis' monitor() can take an early line for a reply on a busy server and stall.)
 */
async function monitor(onLine: (line: string) => void): Promise<Socket> {
  const url = new URL(REDIS_URL);
  const socket = connect(Number(url.port || 6379), url.hostname);
  let buffered = '';
  let monitoring: () => void;
  const started = new Promise<void>((resolve) => (monitoring = resolve));
  socket.on('data', (chunk) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') monitoring();
      else onLine(line);
    }
  });
  socket.write('MONITOR\r\n');
  await Promise.race([started, once(socket, 'error').then(([err]) => Promise.reject(err))]);
  return socket;
}

/**
 * The commands clients sent Redis naming the voucher's keys while `work` ran (commands that
 * scripts run inside Redis are left out: a script call is one command).
 */
async function redisCommandsDuring(t: TestApp, voucherId: string, work: () => Promise<void>): Promise<string[]> {
  const marker = `end-of-window-${nextUser++}`;
  const seen: string[] = [];
  let ended = false;
  const socket = await monitor((line) => {
    if (line.includes(marker)) ended = true;
    else if (!line.includes(' lua] ') && line.includes(`:v:${voucherId}`)) seen.push(line);
  });
  try {
    await work();
    // Every command of the window ran before this one: once MONITOR shows it, it has shown them all.
    await t.c.redis.echo(marker);
    await waitFor('MONITOR to catch up', () => ended, 5_000);
  } finally {
    socket.destroy();
  }
  return seen;
}

/** `user` claims on `t` until admitted; fails unless that happens within a second from now. */
async function soldAgainWithinASecond(t: TestApp, voucherId: string, user: number, options: { idempotencyKey?: string } = {}) {
  const released = performance.now();
  const resold = await waitFor('the unit sold again', async () => {
    const res = await claim(t, voucherId, user, options);
    return res.statusCode === 202 && res;
  }, 1_000);
  const ms = performance.now() - released;
  assert.ok(ms <= 1_000, `sold again after ${ms.toFixed(0)} ms`);
  return resold;
}

describe('sold-out fast path', () => {
  it('when a voucher is sold out, then its claims are answered from memory with no Redis command, except a buyer retrying with its Idempotency-Key', async () => {
    const v = await createVoucher(a, { stock: 2 });
    const first = await claim(a, v.id, 1, { idempotencyKey: 'k-1' });
    const second = await claim(a, v.id, 2);
    assert.equal(first.statusCode, 202);
    assert.equal(second.statusCode, 202);
    await untilCached(a, v.id);
    await untilCached(a, v.id, { idempotencyKey: 'k-new' }); // the snapshot of keyed users is in
    await waitForDrain(a.c, v.id); // the pipeline's own calls (it stores the two orders) come before the window

    const answers: { status: number; body: Record<string, unknown> }[] = [];
    const retry: { orderId?: string } = {};
    const commands = await redisCommandsDuring(a, v.id, async () => {
      const strangers = Array.from({ length: 150 }, (_, i) => claim(a, v.id, nextUser++, i % 5 ? {} : { idempotencyKey: `k-${i}` }));
      for (const res of await Promise.all(strangers)) answers.push({ status: res.statusCode, body: res.json() });
      retry.orderId = (await claim(a, v.id, 1, { idempotencyKey: 'k-1' })).json().orderId;
    });
    for (const res of answers) assert.deepEqual(res, { status: 409, body: { code: 'SOLD_OUT', message: 'sold out', waitlisted: false } });
    assert.equal(retry.orderId, first.json().orderId, 'the retry gets its order back');
    assert.equal(commands.length, 1, `only the retry reached Redis:\n${commands.join('\n')}`);
    assert.match(commands[0]!, /\] "evalsha" /i);

    await waitForDrain(a.c, v.id);
    const truth = await assertInvariants(a.c, v.id, [first.json().orderId, second.json().orderId]);
    assert.equal(truth.redisStock, 0);
  });

  it('when a keyed claim reaches a sold-out voucher, then its token is checked and its key read, but its body is not: the answer comes before the body is parsed', async () => {
    const v = await createVoucher(a, { stock: 1 });
    const first = await claim(a, v.id, 1, { idempotencyKey: 'mine-1' });
    assert.equal(first.statusCode, 202);
    await untilCached(a, v.id);
    await untilCached(a, v.id, { idempotencyKey: 'k-new' }); // the snapshot of keyed users is in
    const url = `/api/vouchers/${v.id}/orders`;
    const post = async (headers: Record<string, string>, payload: string) =>
      a.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload });
    const bearer = `Bearer ${await a.token(nextUser++)}`;
    // A body the full path refuses with 400: a stranger's keyed claim is answered before it is read.
    const stranger = await post({ authorization: bearer, 'idempotency-key': 'k-x' }, '{"quantity": 0}');
    assert.deepEqual([stranger.statusCode, stranger.json()], [409, { code: 'SOLD_OUT', message: 'sold out', waitlisted: false }]);
    // What the hook does not answer goes the full path: a forged token, a key the schema refuses, the buyer with a record.
    assert.equal((await post({ authorization: 'Bearer not.a.token', 'idempotency-key': 'k-x' }, '{}')).statusCode, 401);
    assert.equal((await post({ authorization: bearer, 'idempotency-key': 'not a key!' }, '{}')).statusCode, 400);
    const retry = await claim(a, v.id, 1, { idempotencyKey: 'mine-1' });
    assert.deepEqual([retry.statusCode, retry.json().orderId], [202, first.json().orderId]);
    await waitForDrain(a.c, v.id);
    await assertInvariants(a.c, v.id, [first.json().orderId]);
  });

  it('when a waitlist voucher is sold out and its list is full, then the answers from memory tell waiting users they wait', async () => {
    const v = await createVoucher(a, { stock: 1, waitlist: true });
    const bought = await claim(a, v.id, 20);
    assert.equal(bought.statusCode, 202);
    for (const user of [21, 22]) assert.equal((await claim(a, v.id, user)).json().waitlisted, true);
    // The bought order stored first: its settlement is the pipeline's Redis command, not an answer's.
    await waitForDrain(a.c, v.id);
    await untilCached(a, v.id);

    const answers = new Map<number, unknown>();
    const commands = await redisCommandsDuring(a, v.id, async () => {
      for (const user of [21, 22, 23, 24]) answers.set(user, (await claim(a, v.id, user)).json());
    });
    assert.deepEqual(answers.get(21), { code: 'SOLD_OUT', message: 'sold out; you are on the waitlist', waitlisted: true });
    assert.equal((answers.get(22) as { waitlisted: boolean }).waitlisted, true);
    assert.equal((answers.get(23) as { waitlisted: boolean }).waitlisted, false);
    assert.equal((answers.get(24) as { waitlisted: boolean }).waitlisted, false);
    assert.deepEqual(commands, []);
    assert.equal(await a.c.redis.zcard(a.c.keys.waitlist(BigInt(v.id))), 2, 'the list is unchanged');

    await waitForDrain(a.c, v.id);
    await assertInvariants(a.c, v.id, [bought.json().orderId]);
  });

  it('when a buyer cancels, then another instance that had cached sold-out sells the unit again within a second', async () => {
    const { v, bought } = await boughtOutCachedBy(b, 30);

    const cancelled = await orderAction(a, 'cancel', bought.json().orderId, 30);
    assert.equal(cancelled.json().status, 'cancelled');
    const resold = await soldAgainWithinASecond(b, v.id, 31); // the unit was back in Redis before the cancel was answered

    await waitForDrain(a.c, v.id);
    const truth = await assertInvariants(a.c, v.id, [bought.json().orderId, resold.json().orderId]);
    assert.equal(truth.redisStock, 0);
  });

  it('when units come back without an announcement, then the flag still expires, the unit sells within a second, and its buyer can still retry', async () => {
    const { v, bought } = await boughtOutCachedBy(short, 40);

    // The release commits in SQL; its units reach Redis through scripts that announce nothing, as
    // a relay whose announcement is lost would give them back.
    const silent = createReleases({ db: a.c.db, releaseRelay: { drain: async () => 0 }, pubsub: a.c.pubsub, log: pino({ level: 'silent' }) });
    assert.equal(await silent.cancel(BigInt(bought.json().orderId), 40n), true);
    const restocked = await createScripts(a.c.redis, a.c.keys).restock({ voucherId: BigInt(v.id), orderId: bought.json().orderId, userId: '40', quantity: 1, promotionIds: [] });
    assert.equal(restocked.kind, 'restocked');
    const resold = await soldAgainWithinASecond(short, v.id, 41, { idempotencyKey: 'k-41' });

    // Sold out again: the new flag knows that buyer 41 now has an idempotency record, so their
    // retry still reaches Redis and gets the order back.
    await untilCached(short, v.id, { idempotencyKey: 'k-other' });
    const retry = await claim(short, v.id, 41, { idempotencyKey: 'k-41' });
    assert.equal(retry.statusCode, 202, retry.body);
    assert.equal(retry.json().orderId, resold.json().orderId);

    await a.c.releaseRelay.drain(); // the outbox row: already given back, so only deleted
    await waitForDrain(a.c, v.id);
    const truth = await assertInvariants(a.c, v.id, [bought.json().orderId, resold.json().orderId]);
    assert.equal(truth.redisStock, 0);
  });
});
