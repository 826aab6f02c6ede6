// Use case: a buyer claims units of a seckill voucher. One Lua script takes the rate-limit tokens,
// decides atomically and, when it admits, appends the order to the shard's stream (claims arriving
// together share one call: admission-batch.ts); the database sees the order later, in a batch (the
// order pipeline). Database load is bounded by winners, not by requests; once nothing is left,
// Redis load is not bounded by requests either (sold-out answers come from memory, see
// sold-out-cache.ts).
import type { IdGenerator } from '../ids/worker-lease.js';
import { AdmitCode } from '../infra/redis/scripts/admission.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import type { AdmitOne } from './admission-batch.js';
import type { Claimer } from './claim.js';
import { ADMIT_OUTCOME, admitErrorOf, soldOutError } from './errors.js';
import type { SoldOutCache } from './sold-out-cache.js';

export interface ClaimSeckillDeps {
  ids: IdGenerator;
  /** The admit script, with the rate limits, batched per voucher (admission-batch.ts). */
  admit: AdmitOne;
  redisState: VoucherRedisState;
  soldOut: SoldOutCache;
  onOutcome?: (outcome: string) => void;
}

export function claimSeckillUseCase({ ids, admit, redisState, soldOut, onOutcome }: ClaimSeckillDeps): Claimer {
  return async function claimSeckill(claim) {
    const cached = soldOut.answer(claim.voucher, claim.userId, claim.idempotencyKey !== undefined);
    if (cached) {
      onOutcome?.('sold_out_cached');
      throw soldOutError(cached.waitlisted);
    }
    const input = { userId: claim.userId, orderId: ids.next(), quantity: claim.quantity, idempotencyKey: claim.idempotencyKey };
    const askedAt = soldOut.stamp();
    let result = await admit(claim.voucher.id, input);
    if (result.code === AdmitCode.MISSING) {
      await redisState.rewarm(claim.voucher);
      result = await admit(claim.voucher.id, input);
    }
    if (result.closedAtVersion !== undefined) soldOut.remember(claim.voucher, askedAt, result.closedAtVersion);
    onOutcome?.(ADMIT_OUTCOME[result.code]);
    const rejected = admitErrorOf(result, claim.voucher);
    if (rejected) throw rejected;
    return { orderId: result.orderId, status: 'processing', fresh: result.code === AdmitCode.ADMITTED };
  };
}
