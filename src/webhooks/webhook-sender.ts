// POSTs one order event to WEBHOOK_URL as Standard Webhooks v1 says: the RabbitMQ body, and the
// headers webhook-id (the event id), webhook-timestamp (this attempt, in seconds) and
// webhook-signature (HMAC-SHA256 of "id.timestamp.body" with the secret). Any 2xx is delivery;
// anything else, a redirect included, a timeout or a connection error is a failed attempt.
import { Webhook } from 'standardwebhooks';
import type { EventMessage } from '../events/message.js';

export interface WebhookSender {
  /** Resolves once the receiver answered 2xx; throws with the reason otherwise. `signal` aborts the request. */
  send(message: EventMessage, signal?: AbortSignal): Promise<void>;
}

export interface WebhookSenderDeps {
  url: string;
  /** whsec_ + base64 (WEBHOOK_SECRET). */
  secret: string;
  /** A receiver that has not answered by then is a failed attempt. */
  timeoutMs: number;
}

/** The headers of one attempt at `now`. */
export function webhookHeaders(signer: Webhook, message: EventMessage, now: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': message.eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signer.sign(message.eventId, now, message.body),
  };
}

export function createWebhookSender({ url, secret, timeoutMs }: WebhookSenderDeps): WebhookSender {
  const signer = new Webhook(secret);
  return {
    async send(message, signal) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const res = await fetch(url, {
        method: 'POST',
        headers: webhookHeaders(signer, message, new Date()),
        body: message.body.toString(),
        redirect: 'manual',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      }).catch((err: Error) => {
        throw new Error(timeout.aborted ? `no answer within ${timeoutMs} ms` : describe(err));
      });
      // Read the answer to the end, so the connection goes back to the pool.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 200 || res.status > 299) throw new Error(`answered ${res.status}`);
    },
  };
}

/** fetch's "fetch failed" with its cause: "connect ECONNREFUSED 127.0.0.1:9". */
function describe(err: Error): string {
  const cause = (err as Error & { cause?: { message?: string } }).cause;
  return cause?.message ?? err.message;
}
