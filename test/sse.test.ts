// The SSE writer on a bare Fastify app with hand-made feeds, read over real HTTP: what reaches the
// client and in what order, errors before the stream, HEAD, leaving, not reading, closing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../src/errors.js';
import { createSseStreams, type SseFeed, type SseSend } from '../src/sse.js';
import { connect, sseApp } from './support/sse.js';
import { waitFor } from './support/wait.js';

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
const streams = createSseStreams('test', (index: number) => feeds[index]!.feed, { pingIntervalMs: 50 });
const base = await sseApp((app) => {
  app.addHook('preClose', () => streams.closeAll());
  app.get<{ Params: { feed: string } }>('/events/:feed', (request, reply) => streams.open(request, reply, Number(request.params.feed)));
});

/** The URL of a stream of `hand`. */
function feedUrl(hand: Hand): string {
  feeds.push(hand);
  return `${base}/events/${feeds.length - 1}`;
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
    } finally {
      client.close();
    }
    await waitFor('the stream to be forgotten', () => streams.size === 0);
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
    client.close();
  });

  it('when the server closes, then every stream ends cleanly, and a stream opened while it closes is refused', async () => {
    const hands = [handFeed(), handFeed()];
    const clients = await Promise.all(hands.map((h) => connect(feedUrl(h))));
    await waitFor('both connected', () => clients.every((c) => c.text().startsWith(': connected')));
    await streams.closeAll();
    await Promise.all(clients.map((c) => c.done));
    assert.ok(clients.every((c) => c.ended), 'each stream ended cleanly (not cut)');
    assert.deepEqual(hands.map((h) => h.state.stopped), [1, 1]);

    const late = handFeed();
    const refused = await connect(feedUrl(late));
    await refused.done;
    assert.equal(refused.status, 503);
    assert.equal(late.state.stopped, 1, 'the feed started for it was stopped');
  });
});
