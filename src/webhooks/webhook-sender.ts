// POSTs one order event to WEBHOOK_URL as Standard Webhooks v1 says: the RabbitMQ body, and the
// headers webhook-id (the event id), webhook-timestamp (this attempt, in seconds) and
// webhook-signature (HMAC-SHA256 of "id.timestamp.body" with the secret). Any 2xx is delivery;
// anything else, a redirect included, a timeout or a connection error is a failed attempt.
// undici's request() on a keep-alive Agent of its own: Node 20's fetch() took 3.7× the CPU per
// request (370 against 100 µs with the receiver, one core), 5.8× with a combined abort signal.
import { Agent, request } from 'undici';
import { Webhook } from 'standardwebhooks';
import type { EventMessage } from '../events/message.js';

export interface WebhookSender {
  /** Resolves once the receiver answered 2xx; throws with the reason otherwise. `signal` aborts the request. */
  send(message: EventMessage, signal?: AbortSignal): Promise<void>;
  /** Closes the sender's connections (requests in flight fail). */
  close(): Promise<void>;
}

export interface WebhookSenderDeps {
  url: string;
  /** whsec_ + base64 (WEBHOOK_SECRET). */
  secret: string;
  /** A receiver that has not answered (connected, answered and sent its body) by then is a failed attempt. */
  timeoutMs: number;
}

/** The headers of one attempt at `now`. */
export function webhookHeaders(signer: Webhook, message: EventMessage, now: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': message.eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signer.sign(message.eventId, now, message.body),
    ...(message.traceParent ? { traceparent: message.traceParent } : {}),
  };
}

export function createWebhookSender({ url, secret, timeoutMs }: WebhookSenderDeps): WebhookSender {
  const signer = new Webhook(secret);
  const dispatcher = new Agent({ connect: { timeout: timeoutMs } });
  let closed: Promise<void> | null = null;
  return {
    async send(message, signal) {
      // One deadline for the whole exchange (connect, answer, body).
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), timeoutMs);
      const abort = () => deadline.abort();
      signal?.addEventListener('abort', abort, { once: true });
      try {
        const res = await request(url, { method: 'POST', headers: webhookHeaders(signer, message, new Date()), body: message.body, dispatcher, signal: deadline.signal });
        // Read the answer to the end, so the connection goes back to the pool.
        await res.body.dump();
        if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`answered ${res.statusCode}`);
      } catch (err) {
        if (deadline.signal.aborted && !signal?.aborted) throw new Error(`no answer within ${timeoutMs} ms`);
        throw err;
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abort);
      }
    },
    close: () => (closed ??= dispatcher.close()),
  };
}
