import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OutboxEvent } from '../../src/orders/event-outbox.js';
import { take } from '../../src/webhooks/webhook-queue.js';
import { retryWaitMs, WebhookRelay } from '../../src/webhooks/webhook-relay.js';
import { createWebhookSender } from '../../src/webhooks/webhook-sender.js';
import { range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';
import { assertNeverAhead, TestReceiver, WEBHOOK_SECRET } from './receiver.js';

const receiver = await TestReceiver.start();
const scope = suiteScope();
const t = await startTestApp(scope, 'wh_relays', { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET });
const CONCURRENCY = 3;

function startRelay(): WebhookRelay {
  const relay = WebhookRelay.start({
    db: t.c.db,
    sender: createWebhookSender({ url: receiver.url, secret: WEBHOOK_SECRET, timeoutMs: 1_000 }),
    log: t.c.log,
    pollMs: 20,
    batch: 40,
    concurrency: CONCURRENCY,
    timeoutMs: 1_000,
    maxAgeSeconds: 3600,
    retryFirstMs: 20,
    retryMaxMs: 100,
  });
  scope.after(() => relay.close());
  return relay;
}

/** One transaction's events, as a change writes them. */
async function write(events: OutboxEvent[]): Promise<void> {
  await t.c.db.transaction().execute((trx) => t.c.eventOutbox.write(trx, events));
}

const event = (orderId: number, type: OutboxEvent['type']): OutboxEvent => ({ type, orderId: String(orderId), voucherId: '7', userId: String(orderId + 1000), quantity: 1, status: type === 'stored' ? 'pending_payment' : type });

describe('webhook relays in several workers', () => {
  it('when two relays share a flaky, slow receiver and a third dies holding events, then every event arrives, per order never ahead of an earlier one, with bounded concurrency', async () => {
    const orders = range(1, 60);
    receiver.delayMs = 5;
    // Every third answer fails, whichever event it is.
    receiver.answer = (i) => (i % 3 === 2 ? 500 : 204);
    await write(orders.map((o) => event(o, 'stored')));
    // A relay that leases a round and dies: its rows come back when the lease ends.
    const dead = await take(t.c.db, { batch: 20, leaseMs: 1_500, round: 'dead', maxAgeSeconds: 3600 });
    assert.equal(dead.leased.length, 20);
    startRelay();
    startRelay();
    for (const o of orders) await write([event(o, o % 2 ? 'paid' : 'cancelled')]);
    await write(orders.filter((o) => o % 2).map((o) => event(o, 'expired')));

    const total = orders.length * 2 + orders.length / 2;
    // Retries are 20–100 ms apart, but on a 2-core box running the rest of the suite a round can wait seconds.
    await waitFor(() => `${total} events (have ${receiver.deduped().length})`, () => receiver.deduped().length === total, 30_000);
    const expected = new Map<string, string[]>();
    const rows = receiver.deduped().sort((a, b) => Number(BigInt(a.eventId) - BigInt(b.eventId)));
    for (const e of rows) expected.set(e.orderId, [...(expected.get(e.orderId) ?? []), e.eventId]);
    for (const o of orders) {
      const types = rows.filter((e) => e.orderId === String(o)).map((e) => e.type);
      assert.deepEqual(types, o % 2 ? ['stored', 'paid', 'expired'] : ['stored', 'cancelled'], `order ${o}`);
    }
    assertNeverAhead(receiver.delivered(), expected);
    assert.ok(receiver.received.some((r) => r.status === 500), 'some attempts failed');
    assert.ok(receiver.maxInFlight <= 2 * CONCURRENCY, `at most ${2 * CONCURRENCY} requests at once (saw ${receiver.maxInFlight})`);
    receiver.assertSigned();
    await waitFor('the webhook outbox to be empty', async () => (await t.c.db.selectFrom('webhook_events').select('event_id').execute()).length === 0, 3_000);
  });
});

describe('the wait before a retry', () => {
  const deps = { retryFirstMs: 1_000, retryMaxMs: 300_000, maxAgeSeconds: 3600 };
  it('when attempts fail, then the wait doubles up to its cap, and never reaches past the maximum age', () => {
    assert.deepEqual([0, 1, 2, 10, 40].map((attempts) => retryWaitMs({ attempts, ageMs: 0 }, 0, deps)), [1_000, 2_000, 4_000, 300_000, 300_000]);
    assert.equal(retryWaitMs({ attempts: 10, ageMs: 3_599_000 }, 500, deps), 500, 'due when it is to be given up');
    assert.equal(retryWaitMs({ attempts: 0, ageMs: 3_700_000 }, 0, deps), 0);
  });
});
