// The cheapest answer there is: a claim on a voucher that is sold out for everyone alike (no
// waitlist, no claim tokens) and that carries no Idempotency-Key is answered SOLD_OUT in the
// route's first hook, from memory, before the bearer token's signature or the body is looked at.
// The answer is the same for every caller and public anyway (GET /api/vouchers/:id shows
// available: 0), and in a sale most requests arrive after the stock is gone; checking their
// tokens first would cost more than everything else in the answer. A request without a bearer
// token still hears 401. Every other claim takes the full path (seckill-claimer.ts consults the
// flag again, with the caller known).
import type { onRequestHookHandler } from 'fastify';
import { soldOutError } from './errors.js';
import { parseId } from '../id-text.js';
import type { SoldOutCache } from './sold-out-cache.js';

const SOLD_OUT_BODY = JSON.stringify(soldOutError(false).toBody());

export function soldOutGate(soldOut: Pick<SoldOutCache, 'soldOutForAnyone'>, onAnswer?: () => void): onRequestHookHandler {
  return (request, reply, done) => {
    const voucherId = parseId((request.params as { id: string }).id);
    if (
      voucherId !== null &&
      request.headers['idempotency-key'] === undefined &&
      request.headers.authorization?.startsWith('Bearer ') &&
      soldOut.soldOutForAnyone(voucherId)
    ) {
      onAnswer?.();
      void reply.code(409).type('application/json; charset=utf-8').send(SOLD_OUT_BODY);
      return;
    }
    done();
  };
}
