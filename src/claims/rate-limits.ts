// Token buckets of a claim (lua/lib/bucket.lua): the voucher's and the buyer's, in Redis, taken
// before any other check. A seckill claim takes them inside the admit script, in the same round
// trip (bench/admission measures what a separate call would cost); a limited or common claim
// takes them with one bucket call before its SQL transaction.
import type { Config } from '../config.js';
import type { ClaimRateLimits } from '../infra/redis/scripts/admission.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { Claimer } from './claim.js';
import { rateLimited } from './errors.js';

export function claimRateLimits(config: Config): ClaimRateLimits {
  return {
    voucher: { rate: config.bucketVoucherRate, burst: config.bucketVoucherBurst ?? config.bucketVoucherRate },
    user: { rate: config.bucketUserRate, burst: config.bucketUserBurst ?? 2 * config.bucketUserRate },
  };
}

/** limited and common claims: the buckets first, then the claim (unchanged when both are off). */
export function rateLimitedSqlClaims(scripts: Pick<Scripts, 'takeTokens'>, limits: ClaimRateLimits, claimInSql: Claimer): Claimer {
  if (limits.voucher.rate === 0 && limits.user.rate === 0) return claimInSql;
  return async (claim) => {
    const waitMs = await scripts.takeTokens(claim.voucher.id, claim.userId, limits);
    if (waitMs > 0) throw rateLimited(waitMs);
    return claimInSql(claim);
  };
}
