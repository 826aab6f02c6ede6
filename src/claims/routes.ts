import { Type } from 'typebox';
import { type Guards, principalOf } from '../auth/guards.js';
import { AppError } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import type { ClaimTokens } from './claim-tokens.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { VoucherKind } from '../infra/db/types.js';
import type { Claimer } from './claim.js';
import type { SoldOutGate } from './sold-out-gate.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../infra/redis/records.js';

const ClaimBody = Type.Object(
  { quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })) },
  { additionalProperties: false },
);
const ClaimHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ pattern: IDEMPOTENCY_KEY_PATTERN })),
  'claim-token': Type.Optional(Type.String({ maxLength: 256 })),
});
const Claimed = Type.Object({ orderId: Type.String(), status: Type.String() });

export interface ClaimRouteDeps {
  guards: Guards;
  directory: VoucherDirectory;
  /** Vouchers created with claimToken: true take claims only with a valid Claim-Token header. */
  claimTokens: Pick<ClaimTokens, 'check'>;
  /** The claim route's sold-out answers from memory, before and after the token check (sold-out-gate.ts). */
  soldOutGate: SoldOutGate;
  /** The claimer of each kind (claimers.ts). */
  claimers: Record<VoucherKind, Claimer>;
  /** Told of every answer of the route (status code, seconds taken), refusals of earlier hooks included. */
  observe?(statusCode: number, seconds: number): void;
}

export function registerClaimRoutes(app: App, { guards, directory, claimTokens, soldOutGate, claimers, observe }: ClaimRouteDeps) {
  app.post(
    '/api/vouchers/:id/orders',
    {
      onRequest: [soldOutGate.unkeyed, guards.user, soldOutGate.keyed],
      // elapsedTime is Fastify's own clock of the request (no extra timer per claim).
      onResponse: (_request, reply, done) => {
        observe?.(reply.statusCode, reply.elapsedTime / 1000);
        done();
      },
      // A claim may come without a body: treat it as {} (quantity 1).
      preValidation: (request, _reply, done) => {
        request.body ??= {};
        done();
      },
      schema: {
        tags: ['orders'],
        summary: 'Claim units of a voucher',
        description:
          'seckill: 202 {orderId, status:"processing"}; the order is stored asynchronously. ' +
          'limited/common: 201 {orderId, status:"pending_payment"}; the order is stored before the answer. ' +
          'Repeating a request with the same Idempotency-Key returns the same order and takes no second unit. ' +
          'A voucher created with claimToken: true needs header Claim-Token (GET /api/vouchers/:id/claim-token).',
        params: IdParams,
        headers: ClaimHeaders,
        body: ClaimBody,
        response: {
          201: Claimed,
          202: Claimed,
          ...apiErrorAnswers({
            ...ANSWER.body,
            ...ANSWER.user,
            ...ANSWER.voucherNotFound,
            403: 'CLAIM_TOKEN_REQUIRED · CLAIM_TOKEN_EXPIRED · CLAIM_TOKEN_INVALID: the voucher takes claims with a valid Claim-Token of yours only',
            409:
              'NOT_STARTED · ENDED: outside the sale window; SOLD_OUT (the body also has `waitlisted`: true when you are on the waitlist); ' +
              'LIMIT_EXCEEDED: you would hold more than perUserLimit units; CLAIM_IN_PROGRESS (limited): another claim of yours holds the lock, retry; ' +
              'QUEUE_REQUIRED: a queue voucher is sold through its queue (POST /api/vouchers/:id/queue)',
            422: 'IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used with another quantity',
            429: 'RATE_LIMITED: a token bucket (the voucher\'s, or yours for this voucher) or the per-address limit is empty; see Retry-After',
            503:
              'UNAVAILABLE: Redis or the database unreachable, the server overloaded or shutting down, or the replicas did not confirm ' +
              '(the admission may stand: retry with the same Idempotency-Key); LOCK_LOST (limited): nothing was taken, retry; see Retry-After',
          }),
        },
      },
    },
    async (request, reply) => {
      const voucher = await directory.get(BigInt(request.params.id));
      if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${request.params.id} not found`);
      const userId = principalOf(request).userId;
      if (voucher.queue) throw new AppError('QUEUE_REQUIRED', `voucher ${voucher.id} is sold through its queue: POST /api/vouchers/${voucher.id}/queue`);
      if (voucher.claimToken) claimTokens.check(request.headers['claim-token'], voucher.id, userId);
      const claim = {
        voucher,
        userId,
        quantity: request.body.quantity ?? 1,
        idempotencyKey: request.headers['idempotency-key'],
      };
      const { orderId, status } = await claimers[voucher.kind](claim);
      return reply.code(status === 'processing' ? 202 : 201).send({ orderId, status });
    },
  );
}
