// POST /api/payments/stripe: Stripe's webhook. Its signature covers the exact bytes Stripe sent, so
// the route lives in a plugin of its own whose JSON parser keeps the body as bytes; every other
// route keeps the global JSON parsing.
import { Type } from 'typebox';
import { AppError } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App } from '../http.js';
import { type StripeEvent, verifyStripeEvent } from './stripe-events.js';
import type { StripeOutcome } from './stripe-settle.js';

/** Stripe's events outgrow the API's 16 KiB (a session or a charge with its lists). */
const STRIPE_BODY_LIMIT_BYTES = 256 * 1024;

export interface StripeWebhookDeps {
  /** STRIPE_WEBHOOK_SECRET; empty refuses every event. */
  secret: string;
  settle(event: StripeEvent): Promise<StripeOutcome>;
  /** Counts each delivery by outcome (`invalid_signature` included). */
  count(outcome: string): void;
}

/** The refusals counted beside the outcomes: a forged or stale delivery, and an order not stored yet. */
const COUNTED_REFUSALS: Partial<Record<string, string>> = { INVALID_SIGNATURE: 'invalid_signature', ORDER_PROCESSING: 'processing' };

const Received = Type.Object(
  {
    eventId: Type.String(),
    outcome: Type.String({ description: 'what the event did: applied, refund_due, refunded, held, replayed, or why it changed nothing' }),
  },
  { description: 'the event was verified; applied or not, Stripe need not deliver it again' },
);

export function registerStripeWebhook(app: App, { secret, settle, count }: StripeWebhookDeps): void {
  void app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: STRIPE_BODY_LIMIT_BYTES }, (_request, body, done) => done(null, body));
    scope.post(
      '/api/payments/stripe',
      {
        bodyLimit: STRIPE_BODY_LIMIT_BYTES,
        schema: {
          tags: ['payments'],
          // No token: the Stripe-Signature header authenticates the body.
          security: [],
          summary: "Stripe's webhook: payment_intent.succeeded, checkout.session.completed (paid) and charge.refunded, verified by the Stripe-Signature header",
          response: {
            200: Received,
            ...apiErrorAnswers({
              ...ANSWER.body,
              400: 'INVALID_SIGNATURE: the Stripe-Signature header is missing, does not sign the body with STRIPE_WEBHOOK_SECRET (or none is set), or is older than 300 s; INVALID_REQUEST: a signed body that is not a Stripe event',
              413: 'PAYLOAD_TOO_LARGE: the body exceeds 256 KiB',
              409: 'ORDER_PROCESSING: the order is not stored yet; Stripe delivers the event again',
            }),
          },
        },
      },
      async (request) => {
        try {
          const event = verifyStripeEvent(request.body, request.headers['stripe-signature'], secret);
          const outcome = await settle(event);
          count(outcome);
          return { eventId: event.id, outcome };
        } catch (err) {
          const refused = err instanceof AppError ? COUNTED_REFUSALS[err.code] : undefined;
          if (refused) count(refused);
          throw err;
        }
      },
    );
  });
}
