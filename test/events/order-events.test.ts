import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sendableInOrder } from '../../src/events/event-relay.js';
import type { OutboxRow } from '../../src/events/message.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { AMQP_URL, assertEventsDelivered, expectedEvents, eventsByOrder, tapEvents } from '../support/order-events.js';
import { waitFor } from '../../support/wait.js';

const tap = await tapEvents('events');
const t = await startTestApp(suiteScope(), 'events', { EVENTS_AMQP_URL: AMQP_URL, EVENTS_EXCHANGE: tap.exchange, EXPIRY_POLL_MS: '100', EVENTS_POLL_MS: '50' });
await t.c.startWorkers();

describe('order events to RabbitMQ', () => {
  it('when a sale has payments, expiries and waitlist promotions, then every event arrives once after dedupe, per order in order', async () => {
    const v = await createVoucher(t, { stock: 6, waitlist: true, paymentTimeoutSeconds: 1 });
    const buyers = range(500, 6);
    const admitted = await burst(t, v.id, buyers);
    assert.equal(admitted.length, 6);
    const waiting = range(600, 3);
    for (const u of waiting) assert.equal((await claim(t, v.id, u)).json().waitlisted, true);
    await waitForDrain(t.c, v.id);
    const orders = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', v.id).execute();
    for (const o of orders.slice(0, 3)) assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200);

    // The three unpaid orders expire, their units go to the three waiting buyers, whose orders expire too.
    const final = await waitFor('every order to be paid or expired', async () => {
      const all = await t.c.db.selectFrom('orders').select(['id', 'user_id', 'status']).where('voucher_id', '=', v.id).execute();
      return all.length === 9 && all.every((o) => o.status === 'paid' || o.status === 'expired') && all;
    }, 20_000);
    const promoted = new Set(final.filter((o) => waiting.includes(Number(o.user_id))).map((o) => o.id));
    assert.equal(promoted.size, 3, 'every waiting buyer was promoted');
    const expected = await expectedEvents(t.c.db, v.id, promoted);
    const total = [...expected.values()].reduce((n, types) => n + types.length, 0);
    await waitFor(() => `${total} events (have ${tap.deduped().length})`, () => eventsByOrder(tap.deduped(), v.id).size === 9 && tap.deduped().filter((e) => e.voucherId === v.id).length === total, 10_000);
    await assertEventsDelivered(t.c.db, tap, v.id, promoted);

    const ordersById = new Map(final.map((o) => [o.id, o]));
    for (const e of tap.deduped().filter((x) => x.voucherId === v.id)) {
      assert.equal(e.userId, ordersById.get(e.orderId)!.user_id, 'the event names the order\'s buyer');
      assert.equal(e.quantity, 1);
      assert.ok(!Number.isNaN(Date.parse(e.at)) && e.at.endsWith('Z'), 'at is ISO-8601');
    }
    await waitFor('the release outbox to drain', async () => (await t.c.db.selectFrom('release_outbox').select('order_id').execute()).length === 0);
    await assertInvariants(t.c, v.id, admitted);
    const metrics = await t.c.metrics.registry.metrics();
    assert.match(metrics, /seckill_events_outbox_backlog 0/);
    assert.match(metrics, /seckill_events_published_total [1-9]/);
  });

  it('when limited orders are claimed and cancelled in SQL, then their stored and cancelled events arrive', async () => {
    const v = await createVoucher(t, { kind: 'limited', stock: 3 });
    const res = await claim(t, v.id, 700);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal((await orderAction(t, 'cancel', res.json().orderId, 700)).statusCode, 200);
    await waitFor('two events', () => tap.deduped().filter((e) => e.voucherId === v.id).length === 2, 5_000);
    await assertEventsDelivered(t.c.db, tap, v.id);
  });
});

describe('which claimed events may leave', () => {
  const row = (eventId: number, orderId: string): OutboxRow => ({
    event_id: String(eventId), order_id: orderId, voucher_id: '1', user_id: '2', type: 'stored', quantity: 1, status: 'pending_payment', created_at: new Date(), trace_parent: null,
  });
  it('when another relay holds an earlier event of an order, then none of that order\'s later events leave before it', () => {
    const claimed = [row(5, 'a'), row(6, 'b'), row(9, 'a'), row(10, 'c')];
    const unsent = [5, 6, 7, 9, 10].map((id) => ({ event_id: String(id), order_id: id === 7 ? 'a' : claimed.find((r) => r.event_id === String(id))!.order_id }));
    assert.deepEqual(sendableInOrder(claimed, unsent).map((r) => r.event_id), ['5', '6', '10'], 'a\'s 9 waits for 7, held elsewhere');
    const held = [{ event_id: '3', order_id: 'c' }, ...unsent];
    assert.deepEqual(sendableInOrder(claimed, held).map((r) => r.event_id), ['5', '6'], 'c waits for its 3');
  });
});
