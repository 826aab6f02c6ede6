// One trace per order, followed in a real `seckill serve` whose spans go to an OTLP/HTTP receiver
// of this file's: a buyer's claim sent with a sampled traceparent, then its payment, and the
// order's events published to RabbitMQ and POSTed to a webhook receiver. The sampler keeps no
// trace of its own (parentbased_traceidratio at 0): the buyers who send no traceparent leave no span.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { createTokenService } from '../../src/auth/tokens.js';
import { JsonClient } from '../../src/loadgen/http-client.js';
import { OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.js';
import { startSeckill } from '../../support/processes.js';
import { waitFor } from '../../support/wait.js';
import { processData } from '../support/helpers.js';
import { AMQP_URL, tapEvents } from '../support/order-events.js';
import { TestReceiver, WEBHOOK_SECRET } from '../webhooks/receiver.js';

const SERVER = 2;
const PRODUCER = 4;
const CLIENT = 3;

const otlp = await OtlpReceiver.start();
after(() => otlp.close());
const tap = await tapEvents('tracing');
const webhooks = await TestReceiver.start();
const serve = startSeckill(['serve'], {
  env: {
    ...processData('tracing'),
    PORT: '0',
    JWT_SECRET: 'tracing-test-secret',
    LOG_LEVEL: 'info',
    EVENTS_AMQP_URL: AMQP_URL,
    EVENTS_EXCHANGE: tap.exchange,
    EVENTS_POLL_MS: '50',
    WEBHOOK_URL: webhooks.url,
    WEBHOOK_SECRET,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'seckill-under-test',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  },
});
after(() => serve.stop());

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('tracing', () => {
  it("when a buyer claims with a sampled traceparent and pays, then one trace holds the request, the admission, the store, the payment, the publishes and the deliveries, parent to child; an unpaid order's expiry joins its trace too, and so does the promotion of the waiting buyer its unit goes to", { timeout: 90_000 }, async () => {
    const address = (await serve.line(/listening at (http:\/\/127\.0\.0\.1:\d+)/, 60_000))[1]!;
    await serve.line(/order pipeline started/, 30_000);
    const client = new JsonClient(address);
    after(() => client.close());
    const tokens = createTokenService('tracing-test-secret');
    const admin = await tokens.sign({ userId: 1n, admin: true }, 600);
    const created = await client.request('POST', '/api/vouchers', {
      token: admin,
      body: { title: 'traced', kind: 'seckill', stock: 5, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 600_000).toISOString() },
    });
    assert.equal(created.status, 201);
    const voucherId = String(created.body.id);

    // Three buyers without a traceparent: not sampled, no span anywhere.
    for (const user of [11n, 12n, 13n]) {
      const r = await client.request('POST', `/api/vouchers/${voucherId}/orders`, { token: await tokens.sign({ userId: user, admin: false }, 600), body: {} });
      assert.equal(r.status, 202);
    }
    const traceId = hex(16);
    const callerSpan = hex(8);
    const buyer = await tokens.sign({ userId: 20n, admin: false }, 600);
    const claimed = await client.request('POST', `/api/vouchers/${voucherId}/orders`, { token: buyer, body: {}, headers: { traceparent: `00-${traceId}-${callerSpan}-01` } });
    assert.equal(claimed.status, 202);
    const orderId = String(claimed.body.orderId);
    await waitFor('the order stored', async () => (await client.request('GET', `/api/orders/${orderId}`, { token: buyer })).body.status === 'pending_payment', 20_000);
    const paid = await client.request('POST', `/api/orders/${orderId}/pay`, { token: buyer });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));

    const named = (name: string) => otlp.trace(traceId).find((s) => s.name === name);
    const expected = ['POST /api/vouchers/:id/orders', 'seckill admit', 'order store', 'order payment', 'order.stored publish', 'order.paid publish', 'order.stored deliver', 'order.paid deliver'];
    await waitFor(`the trace's spans (${expected.join(', ')})`, () => expected.every(named), 30_000);
    const span = (name: string): ReceivedSpan => named(name)!;

    const request = span('POST /api/vouchers/:id/orders');
    assert.equal(request.parentSpanId, callerSpan, "the request continues the caller's trace");
    assert.equal(request.kind, SERVER);
    assert.equal(request.service, 'seckill-under-test');
    assert.equal(request.attributes['http.response.status_code'], 202);
    const admit = span('seckill admit');
    assert.equal(admit.parentSpanId, request.spanId);
    assert.equal(admit.attributes['seckill.voucher.id'], voucherId);
    // The order, stored by a batch after the answer: in the claim's trace, linked to the batch's span.
    const store = span('order store');
    assert.equal(store.parentSpanId, admit.spanId, 'stored under the admission it came from');
    assert.equal(store.attributes['seckill.order.id'], orderId);
    assert.equal(store.attributes['seckill.order.outcome'], 'stored');
    assert.equal(store.links.length, 1);
    await waitFor('the batch span', () => otlp.spans.some((s) => s.spanId === store.links[0]!.spanId), 10_000);
    const batch = otlp.spans.find((s) => s.spanId === store.links[0]!.spanId)!;
    assert.equal(batch.name, 'pipeline store');
    assert.equal(batch.parentSpanId, admit.spanId, 'the batch is a child of its first traced claim');
    assert.deepEqual(batch.links.map((l) => l.spanId), [admit.spanId], 'linked to the one traced claim it stored, not to the untraced ones');
    // The payment, a request of its own (untraced), joins the order's trace.
    const payment = span('order payment');
    assert.equal(payment.parentSpanId, store.spanId);
    assert.equal(payment.links.length, 0, 'the paying request was not sampled: nothing to link');
    // Each event's publish and delivery are children of the span that wrote it; the broker message
    // and the webhook request carry their own span as traceparent, for the consumer to continue.
    const events = new Map(tap.received.filter((e) => e.orderId === orderId).map((e) => [e.type, e.eventId]));
    for (const [type, parent] of [['stored', store], ['paid', payment]] as const) {
      const publish = span(`order.${type} publish`);
      assert.equal(publish.parentSpanId, parent.spanId, `order.${type} publish`);
      assert.equal(publish.kind, PRODUCER);
      assert.equal(tap.traceParents.get(events.get(type)!), `00-${traceId}-${publish.spanId}-01`, `the ${type} message's traceparent`);
      const deliver = span(`order.${type} deliver`);
      assert.equal(deliver.parentSpanId, parent.spanId, `order.${type} deliver`);
      assert.equal(deliver.kind, CLIENT);
      const hook = webhooks.received.find((r) => r.event.orderId === orderId && r.event.type === type)!;
      assert.equal(hook.headers.traceparent, `00-${traceId}-${deliver.spanId}-01`, `the ${type} webhook's traceparent`);
    }
    // Nothing of the untraced buyers: every span of the run is in the claim's trace.
    assert.deepEqual(new Set(otlp.spans.map((s) => s.traceId)), new Set([traceId]));
    const untraced = tap.received.filter((e) => e.orderId !== orderId);
    assert.ok(untraced.length >= 3 && untraced.every((e) => !tap.traceParents.has(e.eventId)), 'untraced events carry no traceparent');

    // An order left unpaid: its expiry, done by the payment timer with no request at all, joins its
    // trace; so do the giving back of its unit, which promotes a waiting (untraced) buyer, and the
    // promoted order's store and events.
    const shortVoucher = await client.request('POST', '/api/vouchers', {
      token: admin,
      body: { title: 'traced, unpaid', kind: 'seckill', stock: 1, paymentTimeoutSeconds: 2, waitlist: true, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 600_000).toISOString() },
    });
    const shortId = String(shortVoucher.body.id);
    const unpaidTrace = hex(16);
    const unpaid = await client.request('POST', `/api/vouchers/${shortId}/orders`, { token: buyer, body: {}, headers: { traceparent: `00-${unpaidTrace}-${hex(8)}-01` } });
    assert.equal(unpaid.status, 202);
    const unpaidId = String(unpaid.body.orderId);
    const waiter = await tokens.sign({ userId: 30n, admin: false }, 600);
    const waiting = await client.request('POST', `/api/vouchers/${shortId}/orders`, { token: waiter, body: {} });
    assert.equal(waiting.status, 409, JSON.stringify(waiting.body));
    assert.equal(waiting.body.waitlisted, true);
    const inUnpaid = (name: string) => otlp.trace(unpaidTrace).filter((s) => s.name === name);
    const one = (name: string) => inUnpaid(name)[0]!;
    await waitFor(
      "the expiry and the promotion in the unpaid order's trace",
      () => ['order expired', 'order.expired publish', 'order give back', 'order.promoted publish'].every((n) => inUnpaid(n).length === 1) && inUnpaid('order store').length === 2,
      30_000,
    );
    const stored = new Map(inUnpaid('order store').map((s) => [s.attributes['seckill.order.id'], s]));
    const expired = one('order expired');
    assert.equal(expired.parentSpanId, stored.get(unpaidId)?.spanId);
    assert.equal(expired.attributes['seckill.order.id'], unpaidId);
    assert.equal(one('order.expired publish').parentSpanId, expired.spanId);
    const givenBack = one('order give back');
    assert.equal(givenBack.parentSpanId, expired.spanId, 'the unit is given back under the expiry that released it');
    assert.equal(givenBack.attributes['seckill.order.id'], unpaidId);
    // The waiting buyer's order, promoted by the giving back: stored under it, its events under its store.
    const mine = await waitFor('the promoted order', async () => {
      const r = await client.request('GET', `/api/orders?voucherId=${shortId}`, { token: waiter });
      return (r.body.orders as { id: string }[] | undefined)?.[0];
    }, 10_000);
    const promotedStore = stored.get(String(mine.id));
    assert.equal(promotedStore?.parentSpanId, givenBack.spanId, 'the promoted order is stored under the giving back');
    assert.equal(one('order.promoted publish').parentSpanId, promotedStore.spanId);
  });
});
