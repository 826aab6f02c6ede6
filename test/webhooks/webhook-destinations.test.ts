import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../../src/config.js';
import { checkWebhookSettings } from '../../src/config/webhook-settings.js';
import { dialectOf } from '../../src/infra/db/dialect.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope, type TestApp } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { AMQP_URL, assertEventsDelivered, expectedEvents, eventsByOrder, tapEvents } from '../support/order-events.js';
import { waitFor } from '../../support/wait.js';
import { TestReceiver, WEBHOOK_SECRET } from './receiver.js';

const scope = suiteScope();

/** A sale of three units: one paid, one cancelled, one left pending (five events). */
async function smallSale(t: TestApp): Promise<{ voucherId: string; admitted: string[] }> {
  const v = await createVoucher(t, { stock: 3 });
  const admitted = await burst(t, v.id, range(800, 3));
  await waitForDrain(t.c, v.id);
  const orders = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', v.id).orderBy('id').execute();
  assert.equal((await orderAction(t, 'pay', orders[0]!.id, Number(orders[0]!.user_id))).statusCode, 200);
  assert.equal((await orderAction(t, 'cancel', orders[1]!.id, Number(orders[1]!.user_id))).statusCode, 200);
  return { voucherId: v.id, admitted };
}

async function assertWebhooksDelivered(t: TestApp, receiver: TestReceiver, voucherId: string): Promise<void> {
  const expected = await expectedEvents(t.c.db, voucherId);
  await waitFor('five webhooks', () => receiver.deduped().filter((e) => e.voucherId === voucherId).length === 5, 5_000);
  const got = eventsByOrder(receiver.deduped(), voucherId);
  for (const [orderId, types] of expected) assert.deepEqual(got.get(orderId)?.map((e) => e.type), types, `events of order ${orderId}`);
  receiver.assertSigned();
  await waitFor('the webhook outbox to be empty', async () => (await t.c.db.selectFrom('webhook_events').select('event_id').execute()).length === 0, 3_000);
}

describe('webhooks on, RabbitMQ off', async () => {
  const receiver = await TestReceiver.start();
  const t = await startTestApp(scope, 'wh_only', { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET, WEBHOOK_MAX_AGE_SECONDS: '60', EVENTS_POLL_MS: '50' });
  await t.c.startWorkers();

  it('when orders are stored, paid and cancelled, then each event is POSTed once, signed, and nothing is left for RabbitMQ', async () => {
    const { voucherId, admitted } = await smallSale(t);
    await assertWebhooksDelivered(t, receiver, voucherId);
    assert.equal(receiver.received.length, 5, 'a receiver answering 2xx gets each event once');
    assert.equal((await t.c.db.selectFrom('order_events').select('event_id').execute()).length, 0);
    const metrics = await t.c.metrics.registry.metrics();
    assert.match(metrics, /seckill_webhooks_delivered_total 5\b/);
    assert.match(metrics, /seckill_webhooks_waiting 0\b/);
    assert.doesNotMatch(metrics, /seckill_events_published_total [1-9]/);
    await assertInvariants(t.c, voucherId, admitted);
  });

  it('when an event is still undelivered after WEBHOOK_MAX_AGE_SECONDS, then it is given up, kept and counted, and the order\'s later events still go', async () => {
    receiver.answer = () => 410;
    const v = await createVoucher(t, { kind: 'limited', stock: 2 });
    const res = await claim(t, v.id, 900);
    assert.equal(res.statusCode, 201, res.body);
    const eventId = (await waitFor('a failed attempt', async () => t.c.db.selectFrom('webhook_events').select(['event_id', 'attempts']).where('voucher_id', '=', v.id).where('attempts', '>', 0).executeTakeFirst()))
      .event_id;
    // As if it had happened two minutes ago (the maximum age is one).
    const dialect = dialectOf(t.c.db);
    await t.c.db.updateTable('webhook_events').set({ created_at: dialect.nowPlusSeconds(-120), due_at: sql`${dialect.now}` }).where('event_id', '=', eventId).execute();
    const given = await waitFor('the event to be given up', () => t.c.db.selectFrom('webhook_given_up').selectAll().where('event_id', '=', eventId).executeTakeFirst(), 5_000);
    assert.equal(given.type, 'stored');
    assert.ok(given.attempts >= 1);
    assert.equal(given.last_error, 'answered 410');
    assert.match(await t.c.metrics.registry.metrics(), /seckill_webhooks_given_up_total 1\b/);

    receiver.answer = () => 200;
    assert.equal((await orderAction(t, 'cancel', res.json().orderId, 900)).statusCode, 200);
    await waitFor('the cancelled event', () => receiver.deduped().some((e) => e.voucherId === v.id && e.type === 'cancelled'), 5_000);
    assert.ok(!receiver.deduped().some((e) => e.eventId === String(eventId)), 'the given-up event was never delivered');
    // The relay deletes a delivered row after the receiver's answer: the outbox empties shortly after.
    await waitFor('the outbox emptied', async () => (await t.c.db.selectFrom('webhook_events').select('event_id').where('voucher_id', '=', v.id).execute()).length === 0, 5_000);
  });
});

describe('webhooks and RabbitMQ both on', async () => {
  const receiver = await TestReceiver.start();
  const tap = await tapEvents('wh_both');
  const t = await startTestApp(scope, 'wh_both', { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET, EVENTS_AMQP_URL: AMQP_URL, EVENTS_EXCHANGE: tap.exchange, EVENTS_POLL_MS: '50' });
  await t.c.startWorkers();

  it('when orders change, then both deliver every event, under the same event ids and the same body', async () => {
    const { voucherId, admitted } = await smallSale(t);
    await assertWebhooksDelivered(t, receiver, voucherId);
    await waitFor('five messages', () => tap.deduped().filter((e) => e.voucherId === voucherId).length === 5, 5_000);
    await assertEventsDelivered(t.c.db, tap, voucherId);
    const byId = new Map(tap.deduped().map((e) => [e.eventId, e]));
    for (const e of receiver.deduped()) assert.deepEqual(e, byId.get(e.eventId), `event ${e.eventId} is the same on both`);
    await assertInvariants(t.c, voucherId, admitted);
  });
});

describe('webhook settings', () => {
  it('when WEBHOOK_URL is set without WEBHOOK_SECRET, then the start is refused naming the setting', () => {
    const config = loadConfig({ WEBHOOK_URL: 'https://shop.example/hooks' });
    assert.throws(() => checkWebhookSettings(config), (err: Error) => err instanceof ConfigError && /^WEBHOOK_SECRET is required with WEBHOOK_URL/.test(err.message));
    assert.doesNotThrow(() => checkWebhookSettings({ ...config, webhookSecret: WEBHOOK_SECRET }));
    assert.doesNotThrow(() => checkWebhookSettings(loadConfig({})));
  });
});
