import { Type } from 'typebox';
import { type Guards, principalOf } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';

export interface WaitlistRouteDeps {
  guards: Guards;
  waitlistPosition(voucherId: bigint, userId: bigint): Promise<number>;
}

export function registerWaitlistRoutes(app: App, { guards, waitlistPosition }: WaitlistRouteDeps) {
  app.get(
    '/api/vouchers/:id/waitlist/me',
    {
      onRequest: guards.user,
      schema: {
        tags: ['waitlist'],
        summary: 'Your 1-based position on the waitlist (404 NOT_WAITLISTED when you are not on it)',
        params: IdParams,
        response: {
          200: Type.Object({ position: Type.Integer({ minimum: 1 }) }),
          ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.user, 404: 'NOT_WAITLISTED: you are not on its waitlist; VOUCHER_NOT_FOUND: no voucher has this id' }),
        },
      },
    },
    async (request) => ({ position: await waitlistPosition(BigInt(request.params.id), principalOf(request).userId) }),
  );
}
