import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Logger, pino } from 'pino';
import { createAmqpPublisher } from '../../src/events/amqp-publisher.js';
import { EventRelay } from '../../src/events/event-relay.js';
import { burst, claim, createVoucher, orderAction, range, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';
import { AMQP_URL, assertEventsDelivered, tapEvents } from '../support/order-events.js';
import { AmqpProxy } from '../support/amqp-proxy.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

// The app writes events (EVENTS_AMQP_URL set) but runs no relay of its own: each test starts the
// relays it needs, with their own broker connections.
const tap = await tapEvents('relay_faults');
const t = await startTestApp(suiteScope(), 'relay_faults', { EVENTS_AMQP_URL: AMQP_URL, EVENTS_EXCHANGE: tap.exchange });
await t.c.startPipeline();

const silent = pino({ level: 'silent' });
const broker = new URL(AMQP_URL);

interface RelayOptions {
  afterConfirm?: () => Promise<void>;
  onFailed?: () => void;
  log?: Logger;
  confirmTimeoutMs?: number;
  connectTimeoutMs?: number;
  batch?: number;
}

function startRelay(url: string, { afterConfirm, onFailed, log = silent, confirmTimeoutMs = 10_000, connectTimeoutMs, batch = 100 }: RelayOptions = {}) {
  const publisher = createAmqpPublisher({ url, exchange: tap.exchange, log, confirmTimeoutMs, connectTimeoutMs });
  return EventRelay.start({ db: t.c.db, publisher, log, pollMs: 50, batch, afterConfirm, onFailed });
}

/** A logger that keeps what it writes. */
function recordingLog() {
  const lines: { level: number; msg: string }[] = [];
  return { lines, log: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) };
}

/** Through an AMQP-aware proxy (test/support/amqp-proxy.ts), stopped after the test. */
async function brokerProxy(): Promise<{ proxy: AmqpProxy; url: string }> {
  const proxy = new AmqpProxy(broker.hostname, Number(broker.port || 5672));
  const url = new URL(AMQP_URL);
  url.port = String(await proxy.start());
  return { proxy, url: url.toString() };
}

const outboxRows = async (voucherId: string) => (await t.c.db.selectFrom('order_events').select('event_id').where('voucher_id', '=', voucherId).execute()).length;

/** A sold-out sale of `n` stored orders, half of them paid. */
async function saleWithPayments(n: number, firstUser: number) {
  const v = await createVoucher(t, { stock: n });
  const admitted = await burst(t, v.id, range(firstUser, n));
  assert.equal(admitted.length, n);
  await waitForDrain(t.c, v.id);
  const orders = await t.c.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', v.id).execute();
  for (const o of orders.slice(0, n / 2)) assert.equal((await orderAction(t, 'pay', o.id, Number(o.user_id))).statusCode, 200);
  return v;
}

describe('order-event relay faults', () => {
  it('when the broker is cut for 10.5 s, then nothing is lost: the events wait in the outbox and arrive after it returns', async () => {
    const proxy = new TcpProxy(broker.hostname, Number(broker.port || 5672));
    const port = await proxy.start();
    const viaProxy = new URL(AMQP_URL);
    viaProxy.port = String(port);
    let failures = 0;
    const relay = startRelay(viaProxy.toString(), { onFailed: () => void failures++ });
    try {
      const before = await saleWithPayments(10, 1_000);
      await waitFor('the first sale\'s events', () => tap.deduped().filter((e) => e.voucherId === before.id).length === 15, 10_000);

      await proxy.cut();
      const during = await saleWithPayments(20, 2_000);
      // The length of the outage is what is tested: longer than the relay's 10 s confirm deadline.
      await new Promise((r) => setTimeout(r, 10_500));
      assert.ok(failures > 0, 'the relay kept trying through the cut');
      assert.equal(await outboxRows(during.id), 30, 'every event of the cut waits in the outbox');
      assert.equal(tap.received.filter((e) => e.voucherId === during.id).length, 0, 'nothing got through the cut');

      await proxy.restore();
      await waitFor('the events of the cut to arrive', () => tap.deduped().filter((e) => e.voucherId === during.id).length === 30, 15_000);
      await assertEventsDelivered(t.c.db, tap, before.id);
      await assertEventsDelivered(t.c.db, tap, during.id);
    } finally {
      await relay.close();
      await proxy.stop();
    }
  });

  it('when two relays share a large outbox, then each event is sent once and neither round fails (no deadlock between their deletes)', async () => {
    // 20,000 rows of one order each, written as the pipeline writes them (one multi-row INSERT per
    // batch) while two relays of 1,000-row rounds claim neighbouring id ranges and delete them. The
    // deadlock between their deletes (dialect.ts, limitDelete) showed only under a whole drain's
    // load (bench/drain); this checks that two relays share the work and send nothing twice.
    const voucherId = '77000';
    const events = range(1, 20_000).map((i) => ({ type: 'stored' as const, orderId: String(9_000_000 + i), voucherId, userId: String(i), quantity: 1, status: 'pending_payment' }));
    const write = (from: number) => t.c.db.transaction().execute((trx) => t.c.eventOutbox.write(trx, events.slice(from, from + 500)));
    for (let i = 0; i < 4_000; i += 500) await write(i);
    let failures = 0;
    const relays = [0, 1].map(() => startRelay(AMQP_URL, { batch: 1_000, onFailed: () => void failures++ }));
    try {
      for (let i = 4_000; i < events.length; i += 500) await write(i);
      await waitFor('the outbox to empty', async () => (await outboxRows(voucherId)) === 0, 60_000);
    } finally {
      await Promise.all(relays.map((r) => r.close()));
    }
    await waitFor('every event to arrive', () => tap.received.filter((e) => e.voucherId === voucherId).length >= events.length, 10_000);
    const arrived = tap.received.filter((e) => e.voucherId === voucherId);
    assert.equal(failures, 0, 'no relay round failed');
    assert.equal(arrived.length, events.length, 'each event arrived once');
    assert.equal(new Set(arrived.map((e) => e.eventId)).size, events.length);
  });

  it('when a relay dies after the broker confirmed but before its rows are deleted, then another sends them again and dedupe keeps each once', async () => {
    const v = await saleWithPayments(10, 3_000);
    // Dies at the worst moment, every round: its transaction is rolled back as a killed process's is.
    const dying = startRelay(AMQP_URL, { afterConfirm: () => Promise.reject(new Error('killed between publish and delete')) });
    await waitFor('every event published at least once', () => tap.deduped().filter((e) => e.voucherId === v.id).length === 15, 10_000);
    await dying.close();
    assert.equal(await outboxRows(v.id), 15, 'nothing was deleted');

    const survivor = startRelay(AMQP_URL);
    try {
      await assertEventsDelivered(t.c.db, tap, v.id);
      const copies = tap.received.filter((e) => e.voucherId === v.id).length;
      assert.ok(copies >= 30, `each event arrived at least twice (${copies} deliveries of 15 events)`);
    } finally {
      await survivor.close();
    }
  });

  it('when the release relay rolls back after Redis promoted a waiting buyer, then that order\'s promoted and stored events still arrive, in that order', async () => {
    const v = await createVoucher(t, { stock: 1, waitlist: true });
    const [released] = await burst(t, v.id, [4_000]);
    assert.ok(released);
    assert.equal((await claim(t, v.id, 4_001)).json().waitlisted, true);
    await waitForDrain(t.c, v.id);
    // The relay's transaction fails after the restock script promoted the waiter in Redis (as a
    // lost database connection would); its next run finds the release given back already.
    const handOff = t.c.moves.handOff;
    t.c.moves.handOff = async () => {
      t.c.moves.handOff = handOff;
      throw new Error('database connection lost');
    };
    assert.equal((await orderAction(t, 'cancel', released, 4_000)).statusCode, 200);
    assert.equal(t.c.moves.handOff, handOff, 'the release relay failed once');
    assert.equal(await t.c.releaseRelay.drain(), 1, 'the release is relayed again');
    const promoted = await waitFor('the promoted order to be stored', async () => {
      const row = await t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).where('user_id', '=', '4001').executeTakeFirst();
      return row?.id;
    }, 10_000);

    const relay = startRelay(AMQP_URL);
    try {
      await waitFor('four events', () => tap.deduped().filter((e) => e.voucherId === v.id).length === 4, 10_000);
      await assertEventsDelivered(t.c.db, tap, v.id, new Set([promoted]));
    } finally {
      await relay.close();
    }
  });

  it('when the broker never answers channel setup, then the relay gives up within its deadline and holds no outbox row meanwhile', async () => {
    const { proxy, url } = await brokerProxy();
    proxy.stallChannels = true;
    let failures = 0;
    const relay = startRelay(url, { connectTimeoutMs: 500, onFailed: () => failures++ });
    try {
      const v = await saleWithPayments(4, 5_000);
      await waitFor('a round to fail on the deadline', () => failures > 0, 5_000);
      // Another relay could take every row: none is locked by the one waiting for the broker.
      const free = await t.c.db.transaction().execute((trx) =>
        trx.selectFrom('order_events').select('event_id').where('voucher_id', '=', v.id).forUpdate().skipLocked().execute());
      assert.equal(free.length, 6, 'no row held while connecting');
      assert.ok(proxy.connections <= 1, `given-up connections are gone (${proxy.connections} open)`);

      proxy.stallChannels = false;
      await waitFor('the events to arrive', () => tap.deduped().filter((e) => e.voucherId === v.id).length === 6, 10_000);
      await assertEventsDelivered(t.c.db, tap, v.id);
    } finally {
      await relay.close();
      await proxy.stop();
    }
  });

  it('when the broker blocks publishing (resource alarm), then the relay waits on the one blocked connection, says so, and sends everything once it is unblocked', async () => {
    const { proxy, url } = await brokerProxy();
    const { lines, log } = recordingLog();
    // A short confirm deadline: a relay that gives the blocked connection up would open many.
    const relay = startRelay(url, { log, confirmTimeoutMs: 300 });
    try {
      const before = await saleWithPayments(2, 6_000);
      await waitFor('the first events', () => tap.deduped().filter((e) => e.voucherId === before.id).length === 3, 10_000);

      proxy.setAlarm(true);
      const during = await saleWithPayments(4, 6_100);
      await waitFor('the block to be logged as a warning', () => lines.some((l) => l.level === 40 && /blocked publishing/.test(l.msg)), 10_000);
      // "Nothing piles up" needs time: ten confirm deadlines, each a chance to open another connection.
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(proxy.connections, 1, 'no connection piles up while blocked');
      assert.equal(await outboxRows(during.id), 6, 'the events wait in the outbox');

      proxy.setAlarm(false);
      await waitFor('the events of the alarm to arrive', () => tap.deduped().filter((e) => e.voucherId === during.id).length === 6, 10_000);
      await assertEventsDelivered(t.c.db, tap, during.id);
      assert.equal(proxy.connections, 1);
      assert.ok(lines.some((l) => /unblocked/.test(l.msg)), 'the unblock is logged');
    } finally {
      await relay.close();
      await proxy.stop();
    }
  });
});
