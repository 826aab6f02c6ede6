// GET /api/vouchers/:id/claim-token: a buyer's claim token for a voucher created with
// claimToken: true, issued only inside the sale window (this process's clock; the claim itself is
// still judged by Redis time) and never valid past its end.
import { Type } from 'typebox';
import { type Guards, principalOf } from '../auth/guards.js';
import { AppError } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import { endedError, notStartedError } from './errors.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { ClaimTokens } from './claim-tokens.js';

export interface ClaimTokenRouteDeps {
  guards: Guards;
  directory: VoucherDirectory;
  claimTokens: Pick<ClaimTokens, 'issue'>;
  ttlMs: number;
}

export function registerClaimTokenRoute(app: App, { guards, directory, claimTokens, ttlMs }: ClaimTokenRouteDeps) {
  app.get(
    '/api/vouchers/:id/claim-token',
    {
      onRequest: guards.user,
      schema: {
        tags: ['orders'],
        summary: 'A short-lived token for claiming a voucher created with claimToken: true (send it as header Claim-Token)',
        params: IdParams,
        response: {
          200: Type.Object({ token: Type.String(), expiresAt: Type.String() }),
          ...apiErrorAnswers({
            ...ANSWER.badInput,
            ...ANSWER.user,
            404: 'VOUCHER_NOT_FOUND: no voucher has this id; CLAIM_TOKEN_NOT_OFFERED: the voucher takes claims without a claim token',
            409: 'NOT_STARTED · ENDED: outside the sale window',
          }),
        },
      },
    },
    async (request) => {
      const voucher = await directory.get(BigInt(request.params.id));
      if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${request.params.id} not found`);
      if (!voucher.claimToken) throw new AppError('CLAIM_TOKEN_NOT_OFFERED', 'this voucher takes claims without a claim token');
      const now = Date.now();
      if (now < voucher.beginAt.getTime()) throw notStartedError(voucher);
      if (now >= voucher.endAt.getTime()) throw endedError(voucher);
      const expiresAt = new Date(Math.min(now + ttlMs, voucher.endAt.getTime()));
      return { token: claimTokens.issue(voucher.id, principalOf(request).userId, expiresAt), expiresAt: expiresAt.toISOString() };
    },
  );
}
