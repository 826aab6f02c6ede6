import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { type OrderEvent, webhookHandler } from '../../examples/webhook-receiver/receiver.js';

const secret = `whsec_${Buffer.from('example receiver secret').toString('base64')}`;
const handled: OrderEvent[] = [];
let failNext = false;
const handler = webhookHandler(secret, (event) => {
  if (failNext) {
    failNext = false;
    throw new Error('the work failed');
  }
  handled.push(event);
});
const server = createServer((req, res) => void handler(req, res));
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
after(() => new Promise((r) => server.close(r)));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

const event = (eventId: string): OrderEvent => ({ eventId, type: 'paid', orderId: '42', voucherId: '7', userId: '9', quantity: 1, status: 'paid', at: new Date().toISOString() });

/** POSTs `body` signed as the engine signs it (with `signingSecret`, at `at`). */
async function post(body: string, id: string, { signingSecret = secret, at = new Date() } = {}): Promise<number> {
  const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(signingSecret).sign(id, at, body) };
  return (await fetch(url, { method: 'POST', headers, body })).status;
}

describe('webhook receiver example', () => {
  it('when an event is delivered twice, then it is handled once and both answers are 2xx', async () => {
    const body = JSON.stringify(event('101'));
    assert.equal(await post(body, '101'), 204);
    assert.equal(await post(body, '101'), 204);
    assert.deepEqual(handled.map((e) => e.eventId), ['101']);
  });

  it('when the signature, the body or the timestamp is not right, then 401 and nothing is handled', async () => {
    const body = JSON.stringify(event('102'));
    assert.equal(await post(body, '102', { signingSecret: `whsec_${Buffer.from('another secret').toString('base64')}` }), 401);
    const headers = { 'webhook-id': '102', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': new Webhook(secret).sign('102', new Date(), body) };
    assert.equal((await fetch(url, { method: 'POST', headers, body: body.replace('"paid"', '"cancelled"') })).status, 401, 'a changed body');
    assert.equal(await post(body, '102', { at: new Date(Date.now() - 10 * 60_000) }), 401, 'a replay ten minutes later');
    assert.equal(handled.some((e) => e.eventId === '102'), false);
  });

  it('when the work fails, then 500 and the event is not marked, so its redelivery is handled', async () => {
    const body = JSON.stringify(event('103'));
    failNext = true;
    assert.equal(await post(body, '103'), 500);
    assert.equal(await post(body, '103'), 204);
    assert.deepEqual(handled.filter((e) => e.eventId === '103').length, 1);
  });
});
