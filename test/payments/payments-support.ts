// What the payment tests share: the shop's calls (confirm, refund, list) and the rows they leave.
import assert from 'node:assert/strict';
import type { TestApp } from '../support/helpers.js';

/** A bearer token of the shop's backend (role service). */
export const serviceToken = (t: TestApp, userId = 7n) => t.c.tokens.sign({ userId, admin: false, service: true }, 600);

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export interface PaymentBody {
  paymentId: string;
  amount: number;
  currency: string;
  provider?: string;
}

export async function confirm(t: TestApp, orderId: string, body: PaymentBody, token?: string) {
  return t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/payments`, headers: bearer(token ?? (await serviceToken(t))), payload: body });
}

export async function refund(t: TestApp, orderId: string, body: { restock?: boolean } = {}, token?: string) {
  return t.app.inject({ method: 'POST', url: `/api/orders/${orderId}/refund`, headers: bearer(token ?? (await serviceToken(t))), payload: body });
}

export async function readOrder(t: TestApp, orderId: string, token?: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer(token ?? (await t.admin())) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

export async function paymentRows(t: TestApp, orderId: string) {
  return t.c.db.selectFrom('payments').select(['provider', 'payment_id', 'amount', 'currency', 'status', 'reason']).where('order_id', '=', orderId).orderBy('id').execute();
}

export async function orderRow(t: TestApp, orderId: string) {
  return t.c.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow();
}

/** The order-event rows of an order (events on, no relay running: they stay in the outbox). */
export async function eventRows(t: TestApp, orderId: string) {
  return (await t.c.db.selectFrom('order_events').select(['type', 'status']).where('order_id', '=', orderId).orderBy('event_id').execute()).map((e) => `${e.type}:${e.status}`);
}

/** One sample of /metrics (`name{labels}`), 0 when absent. */
export async function metric(t: TestApp, sample: string): Promise<number> {
  const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}
