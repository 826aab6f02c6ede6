// The console's live stream on a bare Fastify app: the first snapshot decides the answer, later
// ones arrive one per interval, a failed one is an `error` event and the stream goes on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';
import { createTickStreams } from '../../src/console/live-stream.js';
import { createStreamSlots } from '../../src/sse.js';
import { connect, sseApp } from '../support/sse.js';
import { waitFor } from '../../support/wait.js';

const INTERVAL_MS = 20;
const sources: (() => Promise<unknown>)[] = [];
const streams = createTickStreams(createStreamSlots({ perUser: 100, total: 100 }), INTERVAL_MS);
const base = await sseApp((app) => {
  app.addHook('preClose', () => streams.closeAll());
  app.get<{ Params: { source: string } }>('/live/:source', (request, reply) => streams.open(request, reply, sources[Number(request.params.source)]!));
});

/** The URL of a stream of `next`'s snapshots. */
function liveUrl(next: () => Promise<unknown>): string {
  sources.push(next);
  return `${base}/live/${sources.length - 1}`;
}

describe('the live stream', () => {
  it('sends the first snapshot at once, then one per interval; a failed one is an error event and the stream goes on', async () => {
    let n = 0;
    const client = await connect(
      liveUrl(async () => {
        n++;
        if (n === 2) throw new Error('store down');
        if (n === 3) throw new AppError('VOUCHER_NOT_FOUND', 'voucher 7 not found');
        return { n };
      }),
    );
    try {
      assert.equal(client.status, 200);
      await waitFor('the fourth snapshot', () => client.text().includes('"n":4'));
      const events = client.blocks().filter((b) => !b.startsWith(':'));
      assert.deepEqual(events.slice(0, 4), [
        'event: snapshot\ndata: {"n":1}',
        'event: error\ndata: {"code":"UNAVAILABLE","message":"a store did not answer; retrying"}',
        'event: error\ndata: {"code":"VOUCHER_NOT_FOUND","message":"voucher 7 not found"}',
        'event: snapshot\ndata: {"n":4}',
      ]);
    } finally {
      client.close();
    }
    await waitFor('the stream to be forgotten', () => streams.size === 0);
    const taken = n;
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 5));
    assert.equal(n, taken, 'no snapshot is taken once the client left');
  });

  it('when the first snapshot fails, then GET and HEAD get an ordinary error answer', async () => {
    const unknown = liveUrl(async () => Promise.reject(new AppError('VOUCHER_NOT_FOUND', 'voucher 9 not found')));
    for (const method of ['GET', 'HEAD']) {
      const client = await connect(unknown, method);
      await client.done;
      assert.equal(client.status, 404, method);
      if (method === 'GET') assert.equal(JSON.parse(client.text()).code, 'VOUCHER_NOT_FOUND');
    }
    assert.equal(streams.size, 0);
  });
});
