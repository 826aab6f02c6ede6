// GET /api/orders (a buyer's stored orders) and GET /api/orders/events (server-sent events of
// their orders), on the real Redis and MariaDB. Event streams are read over a real port with
// node:http; every wait is on a condition with a deadline, never a fixed sleep.
import assert from 'node:assert/strict';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { createEventStreams } from '../../src/orders/event-stream.js';
import type { OrderEvent, UserEventListener } from '../../src/orders/order-pubsub.js';
import { claim, createVoucher, startTestApp, suiteScope } from '../support/helpers.js';
import { waitForDrain } from '../support/invariants.js';
import { waitFor } from '../../support/wait.js';

const t = await startTestApp(suiteScope(), 'orders-api');
await t.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;

// ---------------------------------------------------------------------------------------------
// GET /api/orders

const T0 = Date.parse('2025-03-01T10:00:00.000Z');

interface Row {
  id: bigint;
  voucher: bigint;
  user: bigint;
  /** milliseconds after T0 */
  at: number;
  status?: 'pending_payment' | 'paid' | 'cancelled' | 'expired' | 'failed';
}

async function insertOrders(rows: Row[]) {
  await t.c.db
    .insertInto('orders')
    .values(
      rows.map((r) => ({
        id: r.id,
        voucher_id: r.voucher,
        user_id: r.user,
        quantity: 1,
        status: r.status ?? 'pending_payment',
        created_at: new Date(T0 + r.at),
        expires_at: r.status === undefined || r.status === 'pending_payment' ? new Date(T0 + r.at + 900_000) : null,
        paid_at: null,
        failure_reason: r.status === 'failed' ? 'DB_SOLD_OUT' : null,
      })),
    )
    .execute();
}

async function list(user: number | bigint | null, query = '') {
  return t.app.inject({
    method: 'GET',
    url: `/api/orders${query}`,
    headers: user === null ? {} : { authorization: `Bearer ${await t.token(user)}` },
  });
}

const idsOf = (res: { json(): { orders: { id: string }[] } }) => res.json().orders.map((o) => o.id);

describe('GET /api/orders', () => {
  // user 101: five orders on vouchers 11 and 12, two of them created in the same millisecond
  // (the larger id comes first); user 102: orders on the same vouchers, never shown to 101.
  before(async () => {
    await insertOrders([
      { id: 1001n, voucher: 11n, user: 101n, at: 0 },
      { id: 1002n, voucher: 12n, user: 101n, at: 5_000, status: 'paid' },
      { id: 1003n, voucher: 11n, user: 101n, at: 10_000, status: 'failed' },
      { id: 1005n, voucher: 12n, user: 101n, at: 20_000 },
      { id: 1004n, voucher: 11n, user: 101n, at: 20_000, status: 'cancelled' },
      { id: 2001n, voucher: 11n, user: 102n, at: 15_000 },
      { id: 2002n, voucher: 12n, user: 102n, at: 30_000 },
    ]);
  });

  it("returns only the caller's stored orders, newest first, ties by id descending, in the Order shape", async () => {
    const res = await list(101);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(idsOf(res), ['1005', '1004', '1003', '1002', '1001']);
    const orders = res.json().orders;
    assert.deepEqual(orders[0], {
      id: '1005',
      voucherId: '12',
      userId: '101',
      quantity: 1,
      status: 'pending_payment',
      createdAt: new Date(T0 + 20_000).toISOString(),
      expiresAt: new Date(T0 + 920_000).toISOString(),
      amount: 0,
      currency: 'USD',
    });
    assert.deepEqual(orders[2], {
      id: '1003',
      voucherId: '11',
      userId: '101',
      quantity: 1,
      status: 'failed',
      createdAt: new Date(T0 + 10_000).toISOString(),
      failureReason: 'DB_SOLD_OUT',
      amount: 0,
      currency: 'USD',
    });
    assert.deepEqual(idsOf(await list(102)), ['2002', '2001']);
  });

  it('filters by voucherId', async () => {
    assert.deepEqual(idsOf(await list(101, '?voucherId=11')), ['1004', '1003', '1001']);
    assert.deepEqual(idsOf(await list(101, '?voucherId=12')), ['1005', '1002']);
    assert.deepEqual(idsOf(await list(102, '?voucherId=12')), ['2002']);
    assert.deepEqual(idsOf(await list(101, '?voucherId=999')), []);
  });

  it('honours limit, alone and with the voucher filter', async () => {
    assert.deepEqual(idsOf(await list(101, '?limit=2')), ['1005', '1004']);
    assert.deepEqual(idsOf(await list(101, '?limit=1&voucherId=11')), ['1004']);
    assert.deepEqual(idsOf(await list(101, '?voucherId=12&limit=200')), ['1005', '1002']);
  });

  it('returns 50 orders by default and at most 200', async () => {
    await insertOrders(Array.from({ length: 210 }, (_, i) => ({ id: 10_000n + BigInt(i), voucher: 13n, user: 103n, at: i })));
    const byDefault = idsOf(await list(103));
    assert.equal(byDefault.length, 50);
    assert.equal(byDefault[0], '10209');
    assert.equal(byDefault[49], '10160');
    const most = idsOf(await list(103, '?limit=200'));
    assert.equal(most.length, 200);
    assert.equal(most[199], '10010');
  });

  it('answers a user without orders with an empty list', async () => {
    const res = await list(104);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { orders: [] });
  });

  it('answers every invalid query with 400 INVALID_REQUEST', async () => {
    const cases: [string, string][] = [
      ['voucherId not a number', '?voucherId=abc'],
      ['voucherId zero', '?voucherId=0'],
      ['voucherId negative', '?voucherId=-5'],
      ['voucherId leading zero', '?voucherId=011'],
      ['voucherId fractional', '?voucherId=1.5'],
      ['voucherId too long', '?voucherId=99999999999999999999'],
      ['voucherId empty', '?voucherId='],
      ['voucherId twice', '?voucherId=11&voucherId=12'],
      ['limit zero', '?limit=0'],
      ['limit above 200', '?limit=201'],
      ['limit far above 200', '?limit=1000000'],
      ['limit negative', '?limit=-1'],
      ['limit fractional', '?limit=2.5'],
      ['limit leading zero', '?limit=05'],
      ['limit not a number', '?limit=ten'],
      ['limit empty', '?limit='],
      ['limit twice', '?limit=1&limit=2'],
      ['unknown parameter', '?status=paid'],
      ['unknown parameter beside valid ones', '?limit=2&offset=4'],
    ];
    for (const [name, query] of cases) {
      const res = await list(101, query);
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.equal(res.json().code, 'INVALID_REQUEST', name);
      assert.equal(typeof res.json().message, 'string', name);
    }
  });

  it('refuses a missing or invalid token with 401 UNAUTHORIZED', async () => {
    const anonymous = await list(null);
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().code, 'UNAUTHORIZED');
    const forged = await t.app.inject({ method: 'GET', url: '/api/orders', headers: { authorization: 'Bearer not.a.token' } });
    assert.equal(forged.statusCode, 401);
    assert.equal(forged.json().code, 'UNAUTHORIZED');
    // Authentication comes before query validation.
    const anonymousBadQuery = await list(null, '?limit=0');
    assert.equal(anonymousBadQuery.statusCode, 401);
  });
});

// ---------------------------------------------------------------------------------------------
// GET /api/orders/events

interface SseMessage {
  event: string;
  data: OrderEvent;
}

interface SseClient {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  comments: string[];
  messages: SseMessage[];
  /** True once the server ended the response. */
  readonly ended: boolean;
  /** Resolves when the response ends or the connection closes. */
  done: Promise<void>;
  close(): void;
}

/** Opens an event stream (or any GET) on the listening app and parses what arrives. */
function connect(path: string, token: string | null, origin = base, method = 'GET'): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${origin}${path}`, { method, headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    req.on('error', reject);
    req.on('response', (res) => {
      let raw = '';
      let pending = '';
      let ended = false;
      const client: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => raw,
        comments: [],
        messages: [],
        get ended() {
          return ended;
        },
        done: new Promise((r) => {
          res.on('end', () => {
            ended = true;
            r();
          });
          res.on('close', () => r());
        }),
        close: () => req.destroy(),
      };
      res.setEncoding('utf8');
      res.on('error', () => {});
      res.on('data', (chunk: string) => {
        raw += chunk;
        pending += chunk;
        let cut: number;
        while ((cut = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) client.comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length) client.messages.push({ event, data: JSON.parse(data.join('\n')) as OrderEvent });
        }
      });
      resolve(client);
    });
    req.end();
  });
}

/** Connects and waits for the `: connected` comment, after which the client is subscribed. */
async function subscribe(user: number | bigint, origin = base): Promise<SseClient> {
  const client = await connect('/api/orders/events', await t.token(user), origin);
  assert.equal(client.status, 200, client.text());
  await waitFor('the connected comment', () => client.comments.includes('connected'));
  return client;
}

function event(user: number | bigint, orderId: string, type: OrderEvent['type'] = 'stored'): Omit<OrderEvent, 'at'> {
  return { type, orderId, voucherId: '77', userId: String(user), quantity: 1, status: type === 'stored' ? 'pending_payment' : type };
}

/** Wraps the container's real OrderPubSub.subscribe to count the subscriptions still open. */
function countSubscriptions() {
  const events = t.c.pubsub;
  const original = events.subscribeUser;
  let active = 0;
  events.subscribeUser = async (userId: string, listener: UserEventListener) => {
    const unsubscribe = await original.call(events, userId, listener);
    active++;
    let done = false;
    return () => {
      if (!done) active--;
      done = true;
      unsubscribe();
    };
  };
  return {
    get active() {
      return active;
    },
    restore: () => void (events.subscribeUser = original),
  };
}

describe('GET /api/orders/events', () => {
  it('is its own route, not an order id: 200 event stream with the SSE headers, 401 JSON without a token', async () => {
    const client = await subscribe(201);
    try {
      assert.match(String(client.headers['content-type']), /^text\/event-stream/);
      assert.equal(client.headers['cache-control'], 'no-cache');
      assert.equal(client.headers.connection, 'keep-alive');
      assert.equal(client.headers['x-accel-buffering'], 'no');
      assert.ok(client.text().startsWith(': connected\n'), JSON.stringify(client.text()));
    } finally {
      client.close();
    }

    const anonymous = await connect('/api/orders/events', null);
    await anonymous.done;
    assert.equal(anonymous.status, 401);
    assert.match(String(anonymous.headers['content-type']), /^application\/json/);
    assert.equal(JSON.parse(anonymous.text()).code, 'UNAUTHORIZED');

    const unknownParam = await t.app.inject({
      method: 'GET',
      url: '/api/orders/events?since=1',
      headers: { authorization: `Bearer ${await t.token(201)}` },
    });
    assert.equal(unknownParam.statusCode, 400);
    assert.equal(unknownParam.json().code, 'INVALID_REQUEST');

    // HEAD answers the headers and ends (it would otherwise hold a subscription with no body).
    const head = await connect('/api/orders/events', await t.token(201), base, 'HEAD');
    await head.done;
    assert.equal(head.status, 200);
    assert.match(String(head.headers['content-type']), /^text\/event-stream/);

    // The :id route still answers ids.
    const byId = await t.app.inject({ method: 'GET', url: '/api/orders/424242', headers: { authorization: `Bearer ${await t.token(201)}` } });
    assert.equal(byId.statusCode, 404);
    assert.equal(byId.json().code, 'ORDER_NOT_FOUND');
  });

  it("delivers the caller's events, formatted as SSE, and never another user's", async () => {
    const alice = await subscribe(301);
    const bob = await subscribe(302);
    try {
      await t.c.pubsub.publish([event(302, '9001'), event(301, '9002'), event(302, '9003', 'paid'), event(301, '9004', 'expired')]);
      await waitFor('two events for alice', () => alice.messages.length >= 2);
      await waitFor('two events for bob', () => bob.messages.length >= 2);

      assert.deepEqual(
        alice.messages.map((m) => [m.event, m.data.orderId, m.data.userId]),
        [
          ['stored', '9002', '301'],
          ['expired', '9004', '301'],
        ],
      );
      assert.deepEqual(
        bob.messages.map((m) => [m.event, m.data.orderId]),
        [
          ['stored', '9001'],
          ['paid', '9003'],
        ],
      );
      const first = alice.messages[0]!.data;
      assert.deepEqual({ ...first, at: undefined }, { ...event(301, '9002'), at: undefined });
      assert.ok(!Number.isNaN(Date.parse(first.at)), 'at is a date');
      // The exact wire format of one event.
      assert.ok(alice.text().includes(`event: stored\ndata: ${JSON.stringify(first)}\n\n`), JSON.stringify(alice.text()));

      // A later message for bob only: alice still has exactly her two.
      await t.c.pubsub.publish([event(302, '9005')]);
      await waitFor('a third event for bob', () => bob.messages.length >= 3);
      assert.equal(alice.messages.length, 2);
      assert.ok(alice.messages.every((m) => m.data.userId === '301'));
    } finally {
      alice.close();
      bob.close();
    }
  });

  it('unsubscribes when the client disconnects, and the server keeps serving', async () => {
    const subscriptions = countSubscriptions();
    try {
      const client = await subscribe(401);
      assert.equal(subscriptions.active, 1);
      client.close();
      await waitFor('the subscription to be released', () => subscriptions.active === 0);

      await t.c.pubsub.publish([event(401, '9101')]); // nobody listens: no error

      const again = await subscribe(401);
      try {
        assert.equal(subscriptions.active, 1);
        await t.c.pubsub.publish([event(401, '9102')]);
        await waitFor('the event on the new stream', () => again.messages.length >= 1);
        assert.deepEqual(
          again.messages.map((m) => m.data.orderId),
          ['9102'],
        );
      } finally {
        again.close();
      }
      await waitFor('the second subscription to be released', () => subscriptions.active === 0);
      assert.equal((await list(401)).statusCode, 200);
    } finally {
      subscriptions.restore();
    }
  });

  it('ends open streams when the app closes, so shutdown does not hang', async (ctx) => {
    const other = await startTestApp(ctx, 'orders-sse-close');
    let closed = false as boolean;
    await other.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(other.app.server.address() as AddressInfo).port}`;
    const clients = await Promise.all(
      [501, 502].map(async (u) => {
        const c = await connect('/api/orders/events', await other.token(u), origin);
        await waitFor('connected', () => c.comments.includes('connected'));
        return c;
      }),
    );
    const started = Date.now();
    const closing = other.app.close().then(() => (closed = true));
    // A deadline, not a wait: fail (rather than hang) if the streams keep the server open; then let the clients go.
    await Promise.race([closing, new Promise((r) => setTimeout(r, 5_000).unref())]);
    const took = Date.now() - started;
    if (!closed) clients.forEach((c) => c.close());
    await closing;
    assert.ok(took < 5_000, `app.close() took ${took} ms with open streams`);
    await Promise.all(clients.map((c) => c.done));
    assert.ok(clients.every((c) => c.ended), 'each stream ended cleanly (not cut)');
  });

  it('writes a ping comment at the configured interval', async () => {
    // The stream module on a bare Fastify app with a short interval (the route uses 15 s).
    const app = Fastify();
    const streams = createEventStreams(t.c.pubsub, { slots: t.c.appDeps.orders.streamSlots, pingIntervalMs: 50 });
    app.addHook('preClose', () => streams.closeAll());
    app.get('/events', (request, reply) => streams.open(request, reply, 601n));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const client = await connect('/events', null, `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
      await waitFor('two pings', () => client.comments.filter((c) => c === 'ping').length >= 2);
      assert.equal(streams.size, 1);
      client.close();
      await waitFor('the stream to be forgotten', () => streams.size === 0);
    } finally {
      await app.close();
    }
  });

  it('end to end: a claimed seckill order arrives as a stored event once the pipeline stores it', async () => {
    await t.c.startPipeline();
    const v = await createVoucher(t, { stock: 5 });
    const client = await subscribe(701);
    try {
      const res = await claim(t, v.id, 701);
      assert.equal(res.statusCode, 202, res.body);
      const orderId = res.json().orderId as string;
      await waitForDrain(t.c, v.id);
      const listed = (await list(701, `?voucherId=${v.id}`)).json().orders;
      assert.deepEqual(
        listed.map((o: { id: string; status: string }) => [o.id, o.status]),
        [[orderId, 'pending_payment']],
      );
      const stored = await waitFor(`a stored event for order ${orderId}`, () => client.messages.find((m) => m.event === 'stored' && m.data.orderId === orderId));
      assert.equal(stored.data.userId, '701');
      assert.equal(stored.data.voucherId, v.id);
      assert.equal(stored.data.quantity, 1);
      assert.equal(stored.data.status, 'pending_payment');
    } finally {
      client.close();
    }
  });
});
