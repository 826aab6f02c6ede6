import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebhookRelay } from '../../src/webhooks/webhook-relay.js';
import { createWebhookSender } from '../../src/webhooks/webhook-sender.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { eventsByOrder, expectedEvents } from '../support/order-events.js';
import { waitFor } from '../../support/wait.js';
import { assertNeverAhead, TestReceiver, WEBHOOK_SECRET } from './receiver.js';

const receiver = await TestReceiver.start({ down: true });
const scope = suiteScope();
const t = await startTestApp(scope, 'wh_outage', { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET, EXPIRY_POLL_MS: '100' });
await t.c.startPipeline();
t.c.startExpiry();
// The worker's relay with retries in tenths of a second instead of seconds.
const relay = WebhookRelay.start({
  db: t.c.db,
  sender: createWebhookSender({ url: receiver.url, secret: WEBHOOK_SECRET, timeoutMs: 2_000 }),
  log: t.c.log,
  pollMs: 50,
  batch: 200,
  concurrency: 4,
  timeoutMs: 2_000,
  maxAgeSeconds: 3600,
  retryFirstMs: 200,
  retryMaxMs: 1_000,
  onFailedAttempts: (n) => t.c.metrics.webhookFailedAttempts.inc(n),
  onDelivered: (n) => t.c.metrics.webhooksDelivered.inc(n),
});
t.c.eventOutbox.onCommitted(() => relay.nudge());
scope.after(() => relay.close());

describe('order events as webhooks, through an outage', () => {
  it('when the receiver is down for 10 s, then answers 500 twice, then 2xx, then every event arrives once after dedupe, per order in order, signed', async () => {
    const outageEnds = Date.now() + 10_000;
    const v = await createVoucher(t, { stock: 6, waitlist: true, paymentTimeoutSeconds: 1 });
    const admitted = await burst(t, v.id, range(500, 6));
    const waiting = range(600, 3);
    for (const u of waiting) assert.equal((await claim(t, v.id, u)).json().waitlisted, true);
    await waitForDrain(t.c, v.id);
    const orders = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', v.id).execute();
    for (const o of orders.slice(0, 3)) assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200);
    // The three unpaid orders expire; their units go to the waiting buyers, whose orders expire too.
    const final = await waitFor('every order paid or expired', async () => {
      const all = await t.c.db.selectFrom('orders').select(['id', 'user_id', 'status']).where('voucher_id', '=', v.id).execute();
      return all.length === 9 && all.every((o) => o.status === 'paid' || o.status === 'expired') && all;
    }, 8_000);
    assert.equal(receiver.received.length, 0, 'nothing reached a receiver that is down');
    const waitingRows = await t.c.db.selectFrom('webhook_events').select(['event_id', 'attempts', 'last_error']).execute();
    assert.equal(waitingRows.length, 21, 'every event waits in the webhook outbox');
    assert.ok(waitingRows.some((r) => r.attempts > 0 && /ECONNREFUSED/.test(r.last_error ?? '')), 'attempts were made and refused');
    assert.equal((await t.c.db.selectFrom('order_events').select('event_id').execute()).length, 0, 'nothing is left for RabbitMQ, which is off');

    await new Promise((r) => setTimeout(r, outageEnds - Date.now()));
    receiver.answer = (i) => (i < 2 ? 500 : 204);
    await receiver.up();

    const promoted = new Set(final.filter((o) => waiting.includes(Number(o.user_id))).map((o) => o.id));
    const expected = await expectedEvents(t.c.db, v.id, promoted);
    await waitFor(() => `21 events delivered (have ${receiver.deduped().length})`, () => receiver.deduped().length === 21, 6_000);
    const got = eventsByOrder(receiver.deduped(), v.id);
    for (const [orderId, types] of expected) assert.deepEqual(got.get(orderId)?.map((e) => e.type), types, `events of order ${orderId}`);
    assertNeverAhead(receiver.delivered(), new Map([...got].map(([orderId, events]) => [orderId, events.map((e) => e.eventId)])));
    for (const events of got.values()) assert.ok(events.every((e, i) => i === 0 || BigInt(e.eventId) > BigInt(events[i - 1]!.eventId)), 'ids increase per order');
    assert.deepEqual(receiver.received.slice(0, 2).map((r) => r.status), [500, 500]);
    receiver.assertSigned();

    await waitFor('the webhook outbox to be empty', async () => (await t.c.db.selectFrom('webhook_events').select('event_id').execute()).length === 0, 3_000);
    assert.equal((await t.c.db.selectFrom('webhook_given_up').select('event_id').execute()).length, 0);
    const metrics = await t.c.metrics.registry.metrics();
    assert.match(metrics, /seckill_webhooks_delivered_total 21\b/);
    assert.match(metrics, /seckill_webhooks_failed_attempts_total ([3-9]|\d\d+)\b/);
    await assertInvariants(t.c, v.id, admitted);
  });
});
