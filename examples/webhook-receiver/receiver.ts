// What a receiver of seckill's webhooks must do with each POST, whatever it is built with:
//   1. verify the signature on the raw bytes, before parsing (standardwebhooks checks the
//      webhook-signature header against "webhook-id.webhook-timestamp.body" and refuses a
//      timestamp more than 5 minutes off, so a captured request cannot be replayed later);
//   2. dedupe by webhook-id: delivery is at least once (an answer lost on the way back, a relay
//      that died after the POST, a timeout), so an id already handled is answered 2xx again and
//      not handled twice;
//   3. answer 2xx only once the work is done: any other answer (or none within 10 s) and the
//      event comes again, with back-off; the order's later events wait behind it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export interface OrderEvent {
  eventId: string;
  type: string;
  orderId: string;
  voucherId: string;
  userId: string;
  quantity: number;
  status: string;
  at: string;
}

/** Where handled ids are remembered. In-memory here; keep them in the database the work writes to, in the work's own transaction. */
export interface SeenIds {
  has(id: string): boolean;
  add(id: string): void;
}

/** The ids of the last `max` events handled (older ones are forgotten first). */
export function recentIds(max = 100_000): SeenIds {
  const ids = new Set<string>();
  return {
    has: (id) => ids.has(id),
    add(id) {
      ids.add(id);
      if (ids.size > max) ids.delete(ids.values().next().value!);
    },
  };
}

const MAX_BODY_BYTES = 64 * 1024;

async function rawBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * A request handler for http.createServer: 204 for an event handled now or before, 401 for a bad
 * signature, 413 for a body too large, 500 when `handle` failed (the event comes again).
 */
export function webhookHandler(secret: string, handle: (event: OrderEvent) => Promise<void> | void, seen: SeenIds = recentIds()) {
  const webhook = new Webhook(secret);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await rawBody(req);
    if (body === null) return void res.writeHead(413).end();
    let event: OrderEvent;
    try {
      event = webhook.verify(body, req.headers as Record<string, string>) as OrderEvent;
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      return void res.writeHead(401).end(err.message);
    }
    const id = req.headers['webhook-id'] as string;
    if (!seen.has(id)) {
      try {
        await handle(event);
      } catch {
        return void res.writeHead(500).end();
      }
      seen.add(id);
    }
    res.writeHead(204).end();
  };
}
