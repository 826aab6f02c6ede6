// The cheapest answer there is: a claim on a voucher that is sold out for everyone alike (no
// waitlist, no claim tokens) is answered SOLD_OUT in the route's first hooks, from memory, before
// the body is parsed or validated. The answer is the same for every caller and public anyway
// (GET /api/vouchers/:id shows available: 0), and in a sale most requests arrive after the stock
// is gone. A claim without Idempotency-Key is answered before its bearer token's signature is
// checked (checking it would cost more than everything else in the answer; a request without a
// bearer token still hears 401). A claim with one may be a retry of its buyer's admission, which
// must get its order back: it is answered after the token is verified, when the snapshot of the
// users with idempotency records (sold-out-cache.ts) says its buyer has none. Every other claim
// takes the full path (seckill-claimer.ts consults the flag again, with the caller known).
import type { FastifyReply, onRequestHookHandler } from 'fastify';
import { principalOf } from '../auth/guards.js';
import { parseId } from '../id-text.js';
import { IDEMPOTENCY_KEY } from '../infra/redis/records.js';
import { soldOutError } from './errors.js';
import type { SoldOutCache } from './sold-out-cache.js';

const SOLD_OUT_BODY = JSON.stringify(soldOutError(false).toBody());

export interface SoldOutGate {
  /** First hook of the claim route: claims without Idempotency-Key. */
  unkeyed: onRequestHookHandler;
  /** After the bearer token is verified: claims with one, from buyers without an idempotency record. */
  keyed: onRequestHookHandler;
}

export function soldOutGate(soldOut: Pick<SoldOutCache, 'soldOutForAnyone' | 'soldOutForKeyed'>, onAnswer?: () => void): SoldOutGate {
  const voucherOf = (params: unknown) => parseId((params as { id: string }).id);
  const answer = (reply: FastifyReply) => {
    onAnswer?.();
    void reply.code(409).type('application/json; charset=utf-8').send(SOLD_OUT_BODY);
  };
  return {
    unkeyed(request, reply, done) {
      const voucherId = voucherOf(request.params);
      if (
        voucherId !== null &&
        request.headers['idempotency-key'] === undefined &&
        request.headers.authorization?.startsWith('Bearer ') &&
        soldOut.soldOutForAnyone(voucherId)
      ) {
        return answer(reply);
      }
      done();
    },
    keyed(request, reply, done) {
      const key = request.headers['idempotency-key'];
      const voucherId = voucherOf(request.params);
      // A key the route's schema refuses goes on to be refused there.
      if (typeof key === 'string' && IDEMPOTENCY_KEY.test(key) && voucherId !== null && soldOut.soldOutForKeyed(voucherId, principalOf(request).userId)) {
        return answer(reply);
      }
      done();
    },
  };
}
