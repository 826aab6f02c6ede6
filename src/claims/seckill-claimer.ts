// Use case: a buyer claims units of a seckill voucher. One Lua script takes the rate-limit tokens,
// decides atomically and, when it admits, appends the order to the shard's stream (claims arriving
// together share one call: admission-batch.ts); the database sees the order later, in a batch (the
// order pipeline). Database load is bounded by winners, not by requests; once nothing is left,
// Redis load is not bounded by requests either (sold-out answers come from memory, see
// protection/sold-out-cache.ts).
import { AppError } from '../errors.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import { AdmitCode, type AdmitResult } from '../infra/redis/scripts.js';
import { rateLimited } from './rate-limits.js';
import type { SoldOutCache } from './sold-out-cache.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import type { Voucher } from '../vouchers/voucher.js';
import type { AdmitOne } from './admission-batch.js';

export interface SeckillClaim {
  voucher: Voucher;
  userId: bigint;
  quantity: number;
  idempotencyKey?: string;
}

export interface Admission {
  orderId: string;
  quantity: number;
  /** false when an earlier request with the same Idempotency-Key was answered again. */
  fresh: boolean;
}

export interface ClaimSeckillDeps {
  ids: IdGenerator;
  /** The admit script, with the rate limits, batched per voucher (admission-batch.ts). */
  admit: AdmitOne;
  redisState: VoucherRedisState;
  soldOut: SoldOutCache;
  onOutcome?: (outcome: string) => void;
}

const OUTCOME: Record<AdmitCode, string> = {
  [AdmitCode.ADMITTED]: 'admitted',
  [AdmitCode.REPLAYED]: 'replayed',
  [AdmitCode.MISSING]: 'missing',
  [AdmitCode.NOT_STARTED]: 'not_started',
  [AdmitCode.ENDED]: 'ended',
  [AdmitCode.LIMIT_EXCEEDED]: 'limit_exceeded',
  [AdmitCode.SOLD_OUT]: 'sold_out',
  [AdmitCode.KEY_REUSED]: 'key_reused',
  [AdmitCode.RATE_LIMITED]: 'rate_limited',
};

export const notStartedError = (voucher: Voucher) => new AppError('NOT_STARTED', `the sale starts at ${voucher.beginAt.toISOString()}`);
export const endedError = (voucher: Voucher) => new AppError('ENDED', `the sale ended at ${voucher.endAt.toISOString()}`);
export const soldOutError = (waitlisted: boolean) =>
  new AppError('SOLD_OUT', waitlisted ? 'sold out; you are on the waitlist' : 'sold out', { waitlisted });

/** The one place Lua return codes become API errors. */
function toAdmission(result: AdmitResult, claim: SeckillClaim): Admission {
  switch (result.code) {
    case AdmitCode.ADMITTED:
      return { orderId: result.orderId, quantity: result.quantity, fresh: true };
    case AdmitCode.REPLAYED:
      return { orderId: result.orderId, quantity: result.quantity, fresh: false };
    case AdmitCode.NOT_STARTED:
      throw notStartedError(claim.voucher);
    case AdmitCode.ENDED:
      throw endedError(claim.voucher);
    case AdmitCode.LIMIT_EXCEEDED:
      throw new AppError('LIMIT_EXCEEDED', `at most ${claim.voucher.perUserLimit} unit(s) per user`);
    case AdmitCode.SOLD_OUT:
      throw soldOutError(result.waitlisted);
    case AdmitCode.KEY_REUSED:
      throw new AppError(
        'IDEMPOTENCY_KEY_REUSED',
        `this Idempotency-Key was used for order ${result.orderId} with quantity ${result.quantity}`,
      );
    case AdmitCode.RATE_LIMITED:
      throw rateLimited(result.retryAfterMs ?? 1000);
    case AdmitCode.MISSING:
      throw new AppError('UNAVAILABLE', 'voucher state is not available; retry shortly');
  }
}

export function claimSeckillUseCase({ ids, admit, redisState, soldOut, onOutcome }: ClaimSeckillDeps) {
  return async function claimSeckill(claim: SeckillClaim): Promise<Admission> {
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
    onOutcome?.(OUTCOME[result.code]);
    return toAdmission(result, claim);
  };
}
