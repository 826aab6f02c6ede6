// A randomized storm of payments racing their deadlines: the shop's service route and signed
// Stripe events, duplicated, replayed, out of order, with wrong amounts, refunds and forgeries.
// Afterwards both stores must agree with one story: each payment recorded once, applied or
// refund_due; each order final and consistent with its payments; stock counted with refunds.
// STORM_SEED repeats a run's plans (the timing is the machine's).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { burst, createVoucher, range, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';
import { chargeRefunded, deliver, type Delivery, intentSucceeded, sessionCompleted, STRIPE_SECRET, type TestEvent } from '../support/stripe.js';
import { waitFor } from '../../support/wait.js';
import { serviceToken } from './payments-support.js';

const SEED = Number(process.env.STORM_SEED || Math.floor(Math.random() * 2 ** 31));
const ORDERS = 48;
const PRICE = 990;
const TIMEOUT_SECONDS = 2;

const t = await startTestApp(suiteScope(), 'pay-storm', { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET, EXPIRY_POLL_MS: '50' });
await t.c.startWorkers();
const shopToken = await serviceToken(t);

/** mulberry32: a small seeded generator, so a failing storm can be run again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface Answer {
  orderId: string;
  via: 'stripe' | 'service' | 'forged';
  /** What was asked: a payment, or a refund (Stripe's charge.refunded, or the refund route). */
  asks: 'payment' | 'refund';
  /** The Stripe event's id, or the service payment's id. */
  key: string;
  /** The payment's id (Stripe: the payment intent's). */
  paymentId?: string;
  status: number;
  /** Stripe: the outcome; service: the order status or the error code. */
  result: string;
}

/** Each delivery of the storm, answered; a 503 (an overloaded box) is sent again, as Stripe and a shop do. */
function storm(orders: { id: string; expiresAt: number }[], rnd: () => number) {
  const answers: Answer[] = [];
  const pick = <T>(items: readonly T[]) => items[Math.floor(rnd() * items.length)]!;
  let events = 0;
  const eventId = () => `evt_storm_${SEED}_${++events}`;
  const untilDefinite = async (send: () => Promise<{ statusCode: number; json(): any }>) => {
    for (;;) {
      const res = await send();
      if (res.statusCode !== 503) return res;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  /** At `at` (ms since epoch), or now if that is past. */
  const at = (when: number, run: () => Promise<void>) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, when - Date.now()))).then(run);
  const stripe = async (orderId: string, e: TestEvent, copies = 1) => {
    const paymentId = (e.data.object.payment_intent ?? e.data.object.id) as string;
    await Promise.all(
      range(0, copies).map(async () => {
        const res = await untilDefinite(() => deliver(t, e));
        const asks = e.type === 'charge.refunded' ? 'refund' : 'payment';
        answers.push({ orderId, via: 'stripe', asks, key: e.id, paymentId, status: res.statusCode, result: res.statusCode === 200 ? res.json().outcome : res.json().code });
      }),
    );
  };
  const service = async (orderId: string, paymentId: string) => {
    const res = await untilDefinite(() =>
      t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/payments`, headers: { authorization: `Bearer ${shopToken}` }, payload: { paymentId, amount: PRICE, currency: 'USD' } }),
    );
    answers.push({ orderId, via: 'service', asks: 'payment', key: paymentId, paymentId, status: res.statusCode, result: res.statusCode === 200 ? res.json().status : res.json().code });
  };
  const serviceRefund = async (orderId: string) => {
    const res = await untilDefinite(() => t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/refund`, headers: { authorization: `Bearer ${shopToken}` }, payload: {} }));
    answers.push({ orderId, via: 'service', asks: 'refund', key: `refund_${orderId}`, status: res.statusCode, result: res.statusCode === 200 ? res.json().status : res.json().code });
  };
  const forged = async (orderId: string, how: Delivery) => {
    const e = intentSucceeded(eventId(), orderId, `pi_forged_${orderId}`, PRICE);
    const res = await deliver(t, e, how);
    answers.push({ orderId, via: 'forged', asks: 'payment', key: e.id, status: res.statusCode, result: res.json().code });
  };

  const plans = {
    /** A payment intent, its checkout session, and copies of both. */
    stripe: (o: { id: string }, when: () => number) => {
      const pi = `pi_${o.id}`;
      const intent = intentSucceeded(eventId(), o.id, pi, PRICE);
      return [at(when(), () => stripe(o.id, intent, 1 + Math.floor(rnd() * 3))), at(when(), () => stripe(o.id, sessionCompleted(eventId(), o.id, pi, PRICE))), at(when(), () => stripe(o.id, intent))];
    },
    /** The shop's own record of a payment, sent twice. */
    service: (o: { id: string }, when: () => number) => [at(when(), () => service(o.id, `shop_${o.id}`)), at(when(), () => service(o.id, `shop_${o.id}`))],
    /** Two payments of one order: one applies, the other is a duplicate (or late). */
    duplicate: (o: { id: string }, when: () => number) => [
      at(when(), () => stripe(o.id, intentSucceeded(eventId(), o.id, `pi_${o.id}`, PRICE))),
      at(when(), () => service(o.id, `shop_${o.id}`)),
    ],
    /** A wrong amount (refund_due), then maybe the right one. */
    mismatch: (o: { id: string }, when: () => number) => [
      at(when(), () => stripe(o.id, intentSucceeded(eventId(), o.id, `pi_short_${o.id}`, PRICE - 1, 'USD'))),
      ...(rnd() < 0.5 ? [at(when(), () => service(o.id, `shop_${o.id}`))] : []),
    ],
    /** A Stripe payment and its full refund, in any order, the refund delivered twice. */
    refund: (o: { id: string }, when: () => number) => {
      const pi = `pi_${o.id}`;
      const refund = chargeRefunded(eventId(), o.id, pi, PRICE);
      return [at(when(), () => stripe(o.id, intentSucceeded(eventId(), o.id, pi, PRICE))), at(when(), () => stripe(o.id, refund)), at(when(), () => stripe(o.id, refund))];
    },
    /** The shop's payment and its refund through the refund route, in any order. */
    shopRefund: (o: { id: string }, when: () => number) => [at(when(), () => service(o.id, `shop_${o.id}`)), at(when(), () => serviceRefund(o.id))],
    /** Nothing: the order expires. */
    none: () => [],
  } as const;
  const kinds = Object.keys(plans) as (keyof typeof plans)[];
  const chosen = new Map<string, keyof typeof plans>();
  const work = orders.flatMap((o) => {
    const kind = pick(kinds);
    chosen.set(o.id, kind);
    // Anywhere from now to 600 ms past the deadline: a share of each plan races it or loses.
    const when = () => Date.now() + rnd() * (o.expiresAt + 600 - Date.now());
    const forgery = rnd() < 0.3 ? [at(when(), () => forged(o.id, pick([{ secret: 'whsec_wrong' }, { timestamp: Math.floor(Date.now() / 1000) - 301 }, { tamper: true }, { unsigned: true }])))] : [];
    return [...plans[kind](o, when), ...forgery];
  });
  return { done: Promise.all(work), answers, chosen };
}

const count = <T>(items: T[], key: (item: T) => string) => {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts].sort().map(([k, n]) => `${k} ${n}`).join(', ');
};

describe('a payment storm racing the deadlines', () => {
  it('when service payments and Stripe events, duplicated, replayed, late, wrong, refunded and forged, storm a sale, then both stores tell one consistent story', async (context) => {
    context.diagnostic(`STORM_SEED=${SEED}`);
    const v = await createVoucher(t, { stock: ORDERS, price: PRICE, currency: 'USD', paymentTimeoutSeconds: TIMEOUT_SECONDS });
    const admitted = await burst(t, v.id, range(5_000, ORDERS));
    assert.equal(admitted.length, ORDERS);
    await waitForDrain(t.c, v.id);
    const stored = await t.c.db.selectFrom('orders').select(['id', 'expires_at']).where('voucher_id', '=', v.id).execute();
    const { done, answers, chosen } = storm(stored.map((o) => ({ id: o.id, expiresAt: o.expires_at!.getTime() })), random(SEED));
    await done;
    const ordersIn = (statuses: string[]) => t.c.db.selectFrom('orders').select('id').where('voucher_id', '=', v.id).where('status', 'in', statuses as never).execute();
    await waitFor('every order to be final', async () => (await ordersIn(['pending_payment'])).length === 0);
    await waitFor('the units to be back in Redis', async () => (await t.c.db.selectFrom('release_outbox').select('order_id').execute()).length === 0);

    const orders = new Map((await t.c.db.selectFrom('orders').select(['id', 'status', 'quantity']).where('voucher_id', '=', v.id).execute()).map((o) => [o.id, o]));
    const payments = await t.c.db.selectFrom('payments').select(['order_id', 'provider', 'payment_id', 'status', 'reason']).where('voucher_id', '=', v.id).execute();
    context.diagnostic(`answers: ${count(answers, (a) => `${a.via} ${a.asks} ${a.status} ${a.result}`)}`);
    context.diagnostic(`orders: ${count([...orders.values()], (o) => o.status)}; payments: ${count(payments, (p) => `${p.status} ${p.reason ?? ''}`)}`);

    // Forgeries: refused, and no trace of them anywhere.
    const forged = answers.filter((a) => a.via === 'forged');
    for (const a of forged) assert.deepEqual([a.status, a.result], [400, 'INVALID_SIGNATURE']);
    assert.ok(payments.every((p) => !p.payment_id.startsWith('pi_forged_')), 'no forged payment recorded');
    if (forged.length) assert.equal((await t.c.db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', forged.map((a) => a.key)).execute()).length, 0);

    // Each payment recorded once, applied or refund_due, as every answer about it said.
    const byPayment = new Map<string, (typeof payments)[number]>();
    for (const p of payments) {
      const key = `${p.provider} ${p.payment_id}`;
      assert.ok(!byPayment.has(key), `${key} recorded once`);
      byPayment.set(key, p);
    }
    for (const a of answers.filter((x) => x.via !== 'forged' && x.asks === 'payment')) {
      const recorded = byPayment.get(`${a.via === 'service' ? 'shop' : 'stripe'} ${a.paymentId}`);
      assert.ok(recorded, `${a.via} payment ${a.paymentId} of order ${a.orderId} is recorded (${a.status} ${a.result})`);
      assert.equal(recorded.order_id, a.orderId);
      const expected = { applied: 'applied', paid: 'applied', refund_due: 'refund_due', ORDER_EXPIRED: 'refund_due', ORDER_PAID: 'refund_due', PAYMENT_MISMATCH: 'refund_due', replayed: recorded.status }[a.result];
      assert.equal(recorded.status, expected, `${a.key} answered ${a.status} ${a.result}`);
    }

    // Each order final and consistent with its payments; a refund of the payment it took leaves it refunded.
    for (const [id, o] of orders) {
      const plan = `order ${id} ${o.status} (${chosen.get(id)})`;
      const applied = payments.filter((p) => p.order_id === id && p.status === 'applied');
      assert.ok(['paid', 'refunded', 'expired'].includes(o.status), plan);
      assert.equal(applied.length, o.status === 'expired' ? 0 : 1, `${plan} has ${applied.length} applied payments`);
      const refundedBy = answers.filter((a) => a.orderId === id && a.asks === 'refund');
      const undone = refundedBy.some((a) => (a.via === 'stripe' ? applied[0]?.payment_id === a.paymentId : a.status === 200));
      assert.equal(o.status === 'refunded', undone, `${plan}: refunded exactly when a refund of its payment arrived`);
    }
    assert.deepEqual(await t.c.db.selectFrom('stripe_held_refunds').select('event_id').execute(), [], 'every held refund met its payment');

    // Each Stripe event took effect once, and is recorded as applied.
    const effects = answers.filter((a) => a.via === 'stripe' && ['applied', 'refund_due', 'refunded'].includes(a.result)).map((a) => a.key);
    assert.equal(new Set(effects).size, effects.length, 'no event took effect twice');
    if (effects.length) assert.equal((await t.c.db.selectFrom('stripe_events').select('event_id').where('event_id', 'in', effects).execute()).length, effects.length);

    // Stock in both stores: every refund restocked while the sale is open, so only paid units are sold.
    const truth = await assertInvariants(t.c, v.id, admitted);
    const paidUnits = [...orders.values()].filter((o) => o.status === 'paid').reduce((n, o) => n + o.quantity, 0);
    assert.equal(truth.dbStock, ORDERS - paidUnits);
    assert.equal(truth.redisStock, ORDERS - paidUnits);
  });
});
