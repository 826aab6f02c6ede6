import { Type } from 'typebox';
import { type Guards, principalOf } from '../auth/guards.js';
import { AppError } from '../errors.js';
import { type App, ErrorBody, IdParams } from '../http.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { Admission, SeckillClaim } from './claim.js';

const ClaimBody = Type.Object(
  { quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })) },
  { additionalProperties: false },
);
const ClaimHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })),
});
const Admitted = Type.Object({ orderId: Type.String(), status: Type.String() });

export interface ClaimRouteDeps {
  guards: Guards;
  directory: VoucherDirectory;
  claimSeckill(claim: SeckillClaim): Promise<Admission>;
}

export function registerClaimRoutes(app: App, { guards, directory, claimSeckill }: ClaimRouteDeps) {
  app.post(
    '/api/vouchers/:id/orders',
    {
      onRequest: guards.user,
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
          'Repeating a request with the same Idempotency-Key returns the same order and takes no second unit.',
        params: IdParams,
        headers: ClaimHeaders,
        body: ClaimBody,
        response: { 202: Admitted, '4xx': ErrorBody, '5xx': ErrorBody },
      },
    },
    async (request, reply) => {
      const voucher = await directory.get(BigInt(request.params.id));
      if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${request.params.id} not found`);
      if (voucher.kind !== 'seckill') {
        throw new AppError('NOT_IMPLEMENTED', `claims on ${voucher.kind} vouchers are not available yet`);
      }
      const admission = await claimSeckill({
        voucher,
        userId: principalOf(request).userId,
        quantity: request.body.quantity ?? 1,
        idempotencyKey: request.headers['idempotency-key'],
      });
      return reply.code(202).send({ orderId: admission.orderId, status: 'processing' });
    },
  );
}
