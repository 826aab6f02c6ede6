// The event-stream caps of one API process over real HTTP: the buyer's order events and the
// console's live view share SSE_MAX_PER_USER and SSE_MAX_STREAMS; a stream past them is refused
// 429 TOO_MANY_STREAMS before any stream byte, every slot comes back exactly once however the
// stream ends, and a stream ends when its token expires.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type { App } from '../../src/http.js';
import { createVoucher, startSecondInstance, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { connect, type SseClient } from '../support/sse.js';
import { waitFor } from '../../support/wait.js';

const t = await startTestApp(suiteScope(), 'streams', { SSE_MAX_PER_USER: '2', SSE_MAX_STREAMS: '3' });
const slots = t.c.appDeps.orders.streamSlots;

async function listen(app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}
const base = await listen(t.app);
const voucher = await createVoucher(t);

const ORDER_EVENTS = '/api/orders/events';
const LIVE = `/api/vouchers/${voucher.id}/live`;

async function request(path: string, token: string, method = 'GET', origin = base): Promise<SseClient> {
  return connect(`${origin}${path}`, method, { authorization: `Bearer ${token}` });
}

/** A stream of `user` (an admin for the live view), open and past its opening block. */
async function opened(path: string, user: number, origin = base, from: TestApp = t): Promise<SseClient> {
  const client = await request(path, await from.token(user, path === LIVE), 'GET', origin);
  assert.equal(client.status, 200, client.text());
  await waitFor('the opening block', () => client.text().startsWith(': connected'));
  return client;
}

/** 429 TOO_MANY_STREAMS with Retry-After and the contract's error body, no stream byte. */
async function assertRefused(path: string, user: number, method = 'GET'): Promise<void> {
  const refused = await request(path, await t.token(user, path === LIVE), method);
  if (refused.status !== 429) refused.close(); // a stream: it would not end by itself
  await refused.done;
  assert.equal(refused.status, 429, refused.text());
  assert.equal(refused.headers['retry-after'], '30');
  assert.match(String(refused.headers['content-type']), /^application\/json/);
  if (method === 'GET') {
    const body = JSON.parse(refused.text());
    assert.equal(body.code, 'TOO_MANY_STREAMS');
    assert.equal(typeof body.message, 'string');
  }
}

async function refusalsCounted(): Promise<number> {
  const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  return Number(/^seckill_error_answers_total\{code="TOO_MANY_STREAMS"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

async function closeAll(clients: SseClient[]): Promise<void> {
  for (const client of clients) client.close();
  await waitFor('every slot back', () => slots.inUse() === 0);
}

describe('event-stream caps', () => {
  it('when order events and the live view are served, then they count against one set of slots', () => {
    assert.equal(typeof slots.take, 'function');
    assert.equal(t.c.appDeps.consistency.streamSlots, slots);
  });

  it('when a user holds SSE_MAX_PER_USER streams, then the next one (GET or HEAD) is refused 429 and counted, others still get theirs, and closing one frees its slot', async () => {
    const counted = await refusalsCounted();
    const mine = [await opened(ORDER_EVENTS, 11), await opened(ORDER_EVENTS, 11)];
    await assertRefused(ORDER_EVENTS, 11);
    await assertRefused(ORDER_EVENTS, 11, 'HEAD');
    assert.equal(await refusalsCounted(), counted + 2);
    const other = await opened(ORDER_EVENTS, 12);
    assert.equal(slots.inUse(11n), 2);
    assert.equal(slots.inUse(), 3);
    const scraped = await t.app.inject({ url: '/metrics' });
    assert.match(scraped.body, /^seckill_sse_streams_open 3$/m);

    mine[0]!.close();
    await waitFor('the slot to come back', () => slots.inUse(11n) === 1);
    const again = await opened(ORDER_EVENTS, 11);
    await closeAll([mine[1]!, other, again]);
    assert.equal(slots.inUse(11n), 0);
  });

  it('when the process holds SSE_MAX_STREAMS streams of both kinds, then a new one of either kind is refused 429 until one closes', async () => {
    const live = await opened(LIVE, 1);
    const buyers = [await opened(ORDER_EVENTS, 21), await opened(ORDER_EVENTS, 22)];
    await assertRefused(ORDER_EVENTS, 23);
    await assertRefused(LIVE, 2);
    live.close();
    await waitFor('the slot to come back', () => slots.inUse() === 2);
    const late = await opened(ORDER_EVENTS, 23);
    await closeAll([...buyers, late]);
  });

  it('when a HEAD is answered below the caps, then it holds no slot', async () => {
    const open = await opened(ORDER_EVENTS, 31);
    for (const path of [ORDER_EVENTS, LIVE]) {
      const head = await request(path, await t.token(31, path === LIVE), 'HEAD');
      await head.done;
      assert.equal(head.status, 200, path);
      assert.equal(slots.inUse(), 1, path);
    }
    await closeAll([open]);
  });

  it('when the token of a stream expires, then the stream ends within a second of it with a token-expired event, its slot is back, and the token is refused', async () => {
    const token = await t.c.tokens.sign({ userId: 41n, admin: false }, 2);
    const expiresAt = t.c.tokens.verify(`Bearer ${token}`).expiresAt!;
    const client = await request(ORDER_EVENTS, token);
    assert.equal(client.status, 200, client.text());
    let over = false;
    void client.done.then(() => (over = true));
    await waitFor('the end of the stream', () => over, 5_000, 10).finally(() => client.close());
    const late = Date.now() - expiresAt;
    assert.ok(client.ended, 'ended cleanly, not cut');
    assert.ok(late >= 0 && late < 1_000, `ended ${late} ms after the expiry`);
    assert.match(client.blocks().at(-1)!, /^event: token-expired\ndata: \{"code":"UNAUTHORIZED"/);
    assert.equal(slots.inUse(), 0);

    const again = await request(ORDER_EVENTS, token);
    await again.done;
    assert.equal(again.status, 401);
    assert.equal(JSON.parse(again.text()).code, 'UNAUTHORIZED');
  });

  it('when the server closes with streams open, then each ends and every slot is back', async (ctx) => {
    const second = await startSecondInstance(ctx, t);
    const secondSlots = second.c.appDeps.orders.streamSlots;
    const origin = await listen(second.app);
    const clients = [await opened(ORDER_EVENTS, 51, origin, second), await opened(LIVE, 1, origin, second)];
    assert.equal(secondSlots.inUse(), 2);
    assert.equal(slots.inUse(), 0, 'each process counts its own');
    await second.close();
    await Promise.all(clients.map((c) => c.done));
    assert.equal(secondSlots.inUse(), 0);
  });
});
