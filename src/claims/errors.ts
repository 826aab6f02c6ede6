// Claim rejections, built in one place: the admit script's return codes (admitErrorOf), the SQL
// claims and the claim-token route all answer with these.
import { AppError } from '../errors.js';
import { AdmitCode, type AdmitResult } from '../infra/redis/scripts/admission.js';
import type { Voucher } from '../vouchers/voucher.js';

export const notStartedError = (voucher: Voucher) => new AppError('NOT_STARTED', `the sale starts at ${voucher.beginAt.toISOString()}`);
export const endedError = (voucher: Voucher) => new AppError('ENDED', `the sale ended at ${voucher.endAt.toISOString()}`);
export const soldOutError = (waitlisted: boolean) =>
  new AppError('SOLD_OUT', waitlisted ? 'sold out; you are on the waitlist' : 'sold out', { waitlisted });
/** Units are left in other segments of the voucher, but none reached this claim in time (other buyers took them first, or they are still moving). */
export const unitsOutOfReachError = () =>
  new AppError('UNAVAILABLE', 'units of this voucher are left, but none could be reached in time (taken by other buyers first, or still moving between segments); retry shortly');
export const limitExceededError = (perUserLimit: number) => new AppError('LIMIT_EXCEEDED', `at most ${perUserLimit} unit(s) per user`);
export const keyReusedError = (orderId: string, quantity: number) =>
  new AppError('IDEMPOTENCY_KEY_REUSED', `this Idempotency-Key was used for order ${orderId} with quantity ${quantity}`);

/** 429 RATE_LIMITED; Retry-After in whole seconds (at least 1), the message to the millisecond. */
export function rateLimited(waitMs: number): AppError {
  return new AppError('RATE_LIMITED', `too many claims; retry in ${waitMs} ms`, {}, Math.max(1, Math.ceil(waitMs / 1000)));
}

/** The one place the admit script's rejection codes become API errors (null: admitted or replayed). */
export function admitErrorOf(result: AdmitResult, voucher: Voucher): AppError | null {
  switch (result.code) {
    case AdmitCode.ADMITTED:
    case AdmitCode.REPLAYED:
      return null;
    case AdmitCode.NOT_STARTED:
      return notStartedError(voucher);
    case AdmitCode.ENDED:
      return endedError(voucher);
    case AdmitCode.LIMIT_EXCEEDED:
      return limitExceededError(voucher.perUserLimit);
    case AdmitCode.SOLD_OUT:
    case AdmitCode.SEGMENT_SHORT: // not answered: the claimer borrows and asks again
      return soldOutError(result.waitlisted);
    case AdmitCode.KEY_REUSED:
      return keyReusedError(result.orderId, result.quantity);
    case AdmitCode.RATE_LIMITED:
      return rateLimited(result.retryAfterMs ?? 1000);
    case AdmitCode.MISSING:
      return new AppError('UNAVAILABLE', 'voucher state is not available; retry shortly');
    case AdmitCode.UNVERIFIED:
      return new AppError('UNAVAILABLE', 'Redis changed master; the voucher is being checked against the database before it admits again; retry shortly');
  }
}

/** Outcome label of each admit code (claims counter). */
export const ADMIT_OUTCOME: Record<AdmitCode, string> = {
  [AdmitCode.ADMITTED]: 'admitted',
  [AdmitCode.REPLAYED]: 'replayed',
  [AdmitCode.MISSING]: 'missing',
  [AdmitCode.NOT_STARTED]: 'not_started',
  [AdmitCode.ENDED]: 'ended',
  [AdmitCode.LIMIT_EXCEEDED]: 'limit_exceeded',
  [AdmitCode.SOLD_OUT]: 'sold_out',
  [AdmitCode.KEY_REUSED]: 'key_reused',
  [AdmitCode.RATE_LIMITED]: 'rate_limited',
  [AdmitCode.SEGMENT_SHORT]: 'sold_out',
  [AdmitCode.UNVERIFIED]: 'unverified',
};
