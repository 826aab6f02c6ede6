// What each voucher kind is, as a table of properties: code asks the table (`kindOf(v).redisGated`)
// instead of comparing kind names, so a new kind is one entry here, one claimer in
// claims/claimers.ts, and the value in the database's enum (a migration).
import type { VoucherKind } from '../infra/db/types.js';

export interface KindTraits {
  /**
   * Claims are admitted by Redis (the admit script) and stored later by the order pipeline; the
   * voucher keeps state in Redis (stock, buyers, in-flight orders), which releases give back to
   * and reconciliation repairs. false: claims are decided synchronously in SQL.
   */
  readonly redisGated: boolean;
  /** Each buyer's claims on a voucher run one at a time, under a per-user Redis lock. */
  readonly perUserLock: boolean;
  /** The voucher may have a waitlist (served from Redis when units come back). */
  readonly waitlist: boolean;
}

export const VOUCHER_KINDS = {
  seckill: { redisGated: true, perUserLock: false, waitlist: true },
  limited: { redisGated: false, perUserLock: true, waitlist: false },
  common: { redisGated: false, perUserLock: false, waitlist: false },
} as const satisfies Record<VoucherKind, KindTraits>;

export const VOUCHER_KIND_NAMES = Object.keys(VOUCHER_KINDS) as VoucherKind[];

export const kindOf = (v: { kind: VoucherKind }): KindTraits => VOUCHER_KINDS[v.kind];

/** Kinds with a property, for SQL filters (`where kind in (...)`). */
export const kindsWhere = (trait: keyof KindTraits): VoucherKind[] => VOUCHER_KIND_NAMES.filter((k) => VOUCHER_KINDS[k][trait]);
