// The SSE writer on a bare Fastify app with hand-made feeds, read over real HTTP: what reaches the
// client and in what order, errors before the stream, HEAD, leaving, not reading, the stream
// slots, the caller's token expiring, closing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../src/errors.js';
import { createSseStreams, createStreamSlots, type SseFeed, type SseSend } from '../src/sse.js';
import { connect, sseApp } from './support/sse.js';
import { waitFor } from '../support/wait.js';

/** A feed the test drives: `send` once started, `stopped` once the writer stopped it. */
function handFeed({ check, startFails, early = [] }: { check?: () => Promise<void>; startFails?: boolean; early?: [string, unknown][] } = {}) {
  const state = { started: false, stopped: 0, send: null as SseSend | null };
  const feed: SseFeed = {
    ...(check ? { check } : {}),
    async start(send) {
      if (startFails) throw new AppError('UNAVAILABLE', 'feed down');
      state.started = true;
      // Sent before the headers: they must follow them.
      for (const [event, data] of early) send(event, data);
      state.send = send;
      return () => void state.stopped++;
    },
  };
  return { feed, state };
}

type Hand = ReturnType<typeof handFeed>;
const feeds: Hand[] = [];
const PER_USER = 2;
const TOTAL = 4;
const slots = createStreamSlots({ perUser: PER_USER, total: TOTAL });
const streams = createSseStreams('test', (index: number) => feeds[index]!.feed, { slots, pingIntervalMs: 50 });
const base = await sseApp((app) => {
  app.addHook('preClose', () => streams.closeAll());
  app.get<{ Params: { feed: string } }>('/events/:feed', (request, reply) => streams.open(request, reply, Number(request.params.feed)));
  // As a guard would: the caller, whose token expires `expiresIn` ms from now when given.
  app.get<{ Params: { user: string; feed: string }; Querystring: { expiresIn?: string } }>(
    '/users/:user/events/:feed',
    {
      onRequest: (request, _reply, done) => {
        const { expiresIn } = request.query;
        request.principal = { userId: BigInt(request.params.user), admin: false, ...(expiresIn ? { expiresAt: Date.now() + Number(expiresIn) } : {}) };
        done();
      },
    },
    (request, reply) => streams.open(request, reply, Number(request.params.feed)),
  );
});

/** The URL of a stream of `hand`, anonymous or of `user` (whose token expires in `expiresIn` ms). */
function feedUrl(hand: Hand, user?: number, expiresIn?: number): string {
  feeds.push(hand);
  const path = user === undefined ? '' : `/users/${user}`;
  return `${base}${path}/events/${feeds.length - 1}${expiresIn === undefined ? '' : `?expiresIn=${expiresIn}`}`;
}

/** Opens a stream of a new feed and waits for its opening block. */
async function opened(user?: number, expiresIn?: number) {
  const hand = handFeed();
  const client = await connect(feedUrl(hand, user, expiresIn));
  assert.equal(client.status, 200, client.text());
  await waitFor('connected', () => client.text().startsWith(': connected'));
  return { hand, client };
}

/** A refusal for want of a slot: 429 TOO_MANY_STREAMS with Retry-After, and no stream byte. */
async function assertNoSlot(url: string, method = 'GET'): Promise<void> {
  const refused = await connect(url, method);
  if (refused.status !== 429) refused.close(); // a stream: it would not end by itself
  await refused.done;
  assert.equal(refused.status, 429, refused.text());
  assert.equal(refused.headers['retry-after'], '30');
  assert.match(String(refused.headers['content-type']), /^application\/json/);
  if (method === 'GET') assert.equal(JSON.parse(refused.text()).code, 'TOO_MANY_STREAMS');
}

describe('the SSE writer', () => {
  it('when a feed sends, then the client reads the SSE headers, the opening block, what was sent before them, then the rest', async () => {
    const hand = handFeed({ early: [['first', { n: 1 }]] });
    const client = await connect(feedUrl(hand));
    try {
      assert.equal(client.status, 200);
      assert.match(String(client.headers['content-type']), /^text\/event-stream/);
      assert.equal(client.headers['cache-control'], 'no-cache');
      assert.equal(client.headers['x-accel-buffering'], 'no');
      await waitFor('the first event', () => client.text().includes('event: first'));
      hand.state.send!('second', { n: 2 });
      // Not a valid SSE field value: dropped, never written.
      hand.state.send!('bad\ninjected: x', { n: 3 });
      hand.state.send!('third', { text: 'two\nlines' });
      await waitFor('the third event', () => client.text().includes('event: third'));
      const blocks = client.blocks().filter((b) => b !== ': ping');
      assert.deepEqual(blocks.slice(0, 4), [
        ': connected\nretry: 3000',
        'event: first\ndata: {"n":1}',
        'event: second\ndata: {"n":2}',
        'event: third\ndata: {"text":"two\\nlines"}',
      ]);
      await waitFor('a ping', () => client.text().includes(': ping\n\n'));
      assert.equal(streams.size, 1);
      assert.equal(slots.inUse(), 1);
    } finally {
      client.close();
    }
    await waitFor('the stream to be forgotten', () => streams.size === 0);
    assert.equal(slots.inUse(), 0);
  });

  it('when the check or the start fails, then the answer is an ordinary error and no stream stays open', async () => {
    const unknown = await connect(feedUrl(handFeed({ check: async () => Promise.reject(new AppError('VOUCHER_NOT_FOUND', 'no such voucher')) })));
    await unknown.done;
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.text()).code, 'VOUCHER_NOT_FOUND');

    const down = await connect(feedUrl(handFeed({ startFails: true })));
    await down.done;
    assert.equal(down.status, 503);
    assert.equal(JSON.parse(down.text()).code, 'UNAVAILABLE');
    assert.equal(streams.size, 0);
    assert.equal(slots.inUse(), 0, 'their slots were given back');
  });

  it('when the request is HEAD, then it gets the headers after the check, and the feed never starts', async () => {
    let checked = false;
    const hand = handFeed({ check: async () => void (checked = true) });
    const head = await connect(feedUrl(hand), 'HEAD');
    await head.done;
    assert.equal(head.status, 200);
    assert.match(String(head.headers['content-type']), /^text\/event-stream/);
    assert.equal(checked, true);
    assert.equal(hand.state.started, false);
    assert.equal(slots.inUse(), 0, 'HEAD holds no slot');

    const refused = await connect(feedUrl(handFeed({ check: async () => Promise.reject(new AppError('VOUCHER_NOT_FOUND', 'no such voucher')) })), 'HEAD');
    await refused.done;
    assert.equal(refused.status, 404);
  });

  it('when the client leaves, then its feed stops once and the stream is forgotten', async () => {
    const hand = handFeed();
    const client = await connect(feedUrl(hand));
    await waitFor('connected', () => client.text().startsWith(': connected'));
    assert.equal(streams.size, 1);
    client.close();
    await waitFor('the feed to stop', () => hand.state.stopped === 1);
    await waitFor('the stream to be forgotten', () => streams.size === 0);
    assert.equal(slots.inUse(), 0);
    hand.state.send!('late', {}); // after the end: ignored
    assert.equal(hand.state.stopped, 1);
  });

  it('when the client stops reading, then its stream is cut and its feed stops', async () => {
    const hand = handFeed();
    const client = await connect(feedUrl(hand));
    await waitFor('connected', () => client.text().startsWith(': connected'));
    client.pause();
    const chunk = 'x'.repeat(16 * 1024);
    // The socket's buffers take a few MiB first; then what piles up in the process is cut.
    for (let i = 0; i < 4096 && hand.state.stopped === 0; i++) hand.state.send!('bulk', chunk);
    assert.equal(hand.state.stopped, 1, 'cut before 64 MiB were written');
    assert.equal(streams.size, 0);
    assert.equal(slots.inUse(), 0);
    client.close();
  });

  it('when a user holds as many streams as allowed, then the next one, GET or HEAD, is refused 429 before any byte, until one closes', async () => {
    const mine = await Promise.all([opened(7), opened(7)]);
    const other = await opened(8);
    assert.equal(slots.inUse(7n), PER_USER);
    await assertNoSlot(feedUrl(handFeed(), 7));
    await assertNoSlot(feedUrl(handFeed(), 7), 'HEAD');
    assert.equal(feeds.at(-1)!.state.started, false);
    assert.equal(slots.inUse(), 3, 'the refusals took nothing');

    mine[0]!.client.close();
    await waitFor('the slot to come back', () => slots.inUse(7n) === 1);
    const again = await opened(7);
    for (const { client } of [mine[1]!, other, again]) client.close();
    await waitFor('every slot back', () => slots.inUse() === 0);
    assert.equal(slots.inUse(7n), 0);
  });

  it('when the process holds as many streams as allowed, then any caller is refused 429, and a slot comes back when one closes', async () => {
    const all = await Promise.all([opened(), opened(1), opened(2), opened(3)]);
    await assertNoSlot(feedUrl(handFeed()));
    await assertNoSlot(feedUrl(handFeed(), 4));
    all[0]!.client.close();
    await waitFor('the slot to come back', () => slots.inUse() === TOTAL - 1);
    const last = await opened(4);
    for (const { client } of [...all.slice(1), last]) client.close();
    await waitFor('every slot back', () => slots.inUse() === 0);
  });

  it('when the caller\'s token expires, then a token-expired event is the last block, the stream ends at that time and its slot is back', async () => {
    const expiresIn = 300;
    const started = Date.now();
    const { hand, client } = await opened(9, expiresIn);
    let over = false;
    void client.done.then(() => (over = true));
    await waitFor('the end of the stream', () => over, 3_000, 5).finally(() => client.close());
    const took = Date.now() - started;
    assert.ok(client.ended, 'ended cleanly, not cut');
    assert.ok(took >= expiresIn - 20 && took < expiresIn + 500, `ended after ${took} ms`);
    assert.equal(client.blocks().at(-1), 'event: token-expired\ndata: {"code":"UNAUTHORIZED","message":"token expired"}');
    assert.equal(hand.state.stopped, 1);
    assert.equal(slots.inUse(), 0);
  });

  it('when the token expires beyond the longest timer, then the stream stays open, with no timer overflowing', async () => {
    // An overflowing setTimeout fires after 1 ms (and says so in a warning).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on('warning', onWarning);
    const { hand, client } = await opened(9, 2 ** 31 + 60_000);
    await new Promise((r) => setTimeout(r, 200));
    process.off('warning', onWarning);
    assert.equal(hand.state.stopped, 0, 'still open');
    assert.ok(!client.text().includes('token-expired'));
    assert.deepEqual(warnings.filter((name) => name === 'TimeoutOverflowWarning'), []);
    client.close();
    await waitFor('the slot to come back', () => slots.inUse() === 0);
  });

  it('when the server closes, then every stream ends cleanly, and a stream opened while it closes is refused', async () => {
    const hands = [handFeed(), handFeed()];
    const clients = await Promise.all(hands.map((h) => connect(feedUrl(h))));
    await waitFor('both connected', () => clients.every((c) => c.text().startsWith(': connected')));
    await streams.closeAll();
    await Promise.all(clients.map((c) => c.done));
    assert.ok(clients.every((c) => c.ended), 'each stream ended cleanly (not cut)');
    assert.deepEqual(hands.map((h) => h.state.stopped), [1, 1]);
    assert.equal(slots.inUse(), 0);

    const late = handFeed();
    const refused = await connect(feedUrl(late));
    await refused.done;
    assert.equal(refused.status, 503);
    assert.equal(late.state.stopped, 1, 'the feed started for it was stopped');
    assert.equal(slots.inUse(), 0);
  });
});
