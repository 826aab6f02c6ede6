// A webhook receiver on loopback for the tests: records every request (duplicates and refused ones
// too), answers what the test says, and can be down (nothing listening: connection refused).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { OrderEventBody } from '../../src/events/message.js';

export const WEBHOOK_SECRET = `whsec_${Buffer.from('webhooks test secret, 32 bytes!!').toString('base64')}`;

export interface Received {
  headers: Record<string, string>;
  body: string;
  event: OrderEventBody;
  status: number;
}

export class TestReceiver {
  readonly port: number;
  /** Every request, in arrival order. */
  readonly received: Received[] = [];
  /** The answer to each request (by its index among all requests, in arrival order). */
  answer: (index: number) => number = () => 204;
  /** How long each answer takes. */
  delayMs = 0;
  /** Most requests it held at once. */
  maxInFlight = 0;
  private inFlight = 0;
  private requests = 0;
  private server: Server | null = null;

  private constructor(port: number) {
    this.port = port;
  }

  /** A receiver on a free port, listening unless `down`; stopped after the file. */
  static async start({ down = false } = {}): Promise<TestReceiver> {
    const probe = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => probe.once('listening', r));
    const receiver = new TestReceiver((probe.address() as AddressInfo).port);
    await new Promise((r) => probe.close(r));
    if (!down) await receiver.up();
    after(() => receiver.down());
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/orders`;
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const status = this.answer(this.requests++);
        setTimeout(() => {
          this.inFlight--;
          // Recorded as answered: a request counts once its answer is on its way.
          this.received.push({ headers: req.headers as Record<string, string>, body, event: JSON.parse(body) as OrderEventBody, status });
          res.writeHead(status).end();
        }, this.delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }

  /** Stops listening and drops its connections: the next request is refused. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }

  /** The events answered 2xx, in arrival order, duplicates included. */
  delivered(): OrderEventBody[] {
    return this.received.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.event);
  }

  /** The delivered events with repeated webhook-ids dropped (what a deduping receiver keeps). */
  deduped(): OrderEventBody[] {
    const seen = new Set<string>();
    return this.delivered().filter((e) => !seen.has(e.eventId) && seen.add(e.eventId));
  }

  /** Every request is signed with `secret`, its webhook-id is its body's eventId, and its timestamp is its attempt's. */
  assertSigned(secret = WEBHOOK_SECRET): void {
    const webhook = new Webhook(secret);
    for (const r of this.received) {
      assert.deepEqual(webhook.verify(r.body, r.headers), r.event, 'the signature verifies');
      assert.equal(r.headers['webhook-id'], r.event.eventId, 'webhook-id is the event id');
      assert.equal(r.headers['content-type'], 'application/json');
    }
  }
}

/**
 * Per order, an event is answered 2xx for the first time only after every earlier event of the
 * order was (retries included): `expected` lists each order's event ids in the order they happened.
 */
export function assertNeverAhead(delivered: OrderEventBody[], expected: Map<string, string[]>): void {
  const seen = new Set<string>();
  for (const e of delivered) {
    const ids = expected.get(e.orderId) ?? [];
    for (const earlier of ids.slice(0, ids.indexOf(e.eventId))) assert.ok(seen.has(earlier), `event ${e.eventId} of order ${e.orderId} went before ${earlier}`);
    seen.add(e.eventId);
  }
}
