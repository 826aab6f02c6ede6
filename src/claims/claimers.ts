// The claimer of each voucher kind. A new kind adds its traits in vouchers/kinds.ts and its
// claimer here; the route asks this table and nothing else.
import type { VoucherKind } from '../infra/db/types.js';
import type { Claimer } from './claim.js';

export interface KindClaimers {
  /** Admitted by the Redis script, stored later by the order pipeline. */
  redisGated: Claimer;
  /** Decided and stored in one SQL transaction (under a per-user lock where the kind says so). */
  inSql: Claimer;
}

export function claimersByKind({ redisGated, inSql }: KindClaimers): Record<VoucherKind, Claimer> {
  return { seckill: redisGated, limited: inSql, common: inSql };
}
