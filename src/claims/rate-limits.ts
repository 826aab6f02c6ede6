// Token buckets of a claim (lua/lib/bucket.lua): the voucher's and the buyer's, in Redis, taken
// before any other check. A seckill claim takes them inside the admit script, in the same round
// trip (bench/admission measures what a separate call would cost); a limited or common claim
// takes them with one bucket call before its SQL transaction.
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { ClaimRateLimits, Scripts } from '../infra/redis/scripts.js';
import type { SqlClaim, SqlClaimResult } from './sql-claimer.js';

export function claimRateLimits(config: Config): ClaimRateLimits {
  return {
    voucher: { rate: config.bucketVoucherRate, burst: config.bucketVoucherBurst ?? config.bucketVoucherRate },
    user: { rate: config.bucketUserRate, burst: config.bucketUserBurst ?? config.bucketUserRate },
  };
}

/** 429 RATE_LIMITED; Retry-After in whole seconds (at least 1), the message to the millisecond. */
export function rateLimited(waitMs: number): AppError {
  return new AppError('RATE_LIMITED', `too many claims; retry in ${waitMs} ms`, {}, Math.max(1, Math.ceil(waitMs / 1000)));
}

type SqlClaimCall = (claim: SqlClaim) => Promise<SqlClaimResult>;

/** limited and common claims: the buckets first, then the claim (unchanged when both are off). */
export function rateLimitedSqlClaims(scripts: Pick<Scripts, 'takeTokens'>, limits: ClaimRateLimits, claimInSql: SqlClaimCall): SqlClaimCall {
  if (limits.voucher.rate === 0 && limits.user.rate === 0) return claimInSql;
  return async (claim) => {
    const waitMs = await scripts.takeTokens(claim.voucher.id, claim.userId, limits);
    if (waitMs > 0) throw rateLimited(waitMs);
    return claimInSql(claim);
  };
}
