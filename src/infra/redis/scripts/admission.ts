// The claim step: admit-n.lua (a batch of seckill claims, in groups per voucher segment) and
// bucket-2.lua (the token buckets of a limited or common claim).
import type { KeySpace } from '../keys.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** admit-n.lua's code per claim: SK_CODE in lua/lib/codes.lua, the same numbers. */
export const AdmitCode = {
  ADMITTED: 0,
  REPLAYED: 1,
  MISSING: 2,
  NOT_STARTED: 3,
  ENDED: 4,
  LIMIT_EXCEEDED: 5,
  SOLD_OUT: 6,
  KEY_REUSED: 7,
  RATE_LIMITED: 8,
  /**
   * Only with `enrol: false`: this segment has too few units for the claim and nothing was written;
   * the caller borrows units from another segment of the voucher, then asks again.
   */
  SEGMENT_SHORT: 9,
  /**
   * The segment's state was not verified against the database on this master (a failover or a
   * restart since, lib/master.lua): nothing was decided; verify it, then ask again.
   */
  UNVERIFIED: 10,
} as const;
export type AdmitCode = (typeof AdmitCode)[keyof typeof AdmitCode];

/** A token bucket: `rate` tokens per second (0: off), at most `burst` saved up. */
export interface BucketLimit {
  rate: number;
  burst: number;
}

/** The buckets every claim takes a token from: the voucher's, and the buyer's for that voucher. */
export interface ClaimRateLimits {
  voucher: BucketLimit;
  user: BucketLimit;
}

export const NO_RATE_LIMITS: ClaimRateLimits = { voucher: { rate: 0, burst: 0 }, user: { rate: 0, burst: 0 } };

/** One buyer's claim on a voucher, with the id its order gets if admitted. */
export interface AdmitClaim {
  userId: bigint;
  orderId: bigint;
  quantity: number;
  idempotencyKey?: string;
  /** The W3C traceparent of the claim's span when it is traced: carried in its stream entry. */
  traceParent?: string;
}

export interface AdmitOptions {
  /** Token buckets taken before any other check; none when absent. */
  limits?: ClaimRateLimits;
  /** The segment's shard (src/vouchers/segments.ts); the voucher's own shard when absent. */
  shard?: number;
  /** false: a claim the segment has too few units for is SEGMENT_SHORT, not SOLD_OUT (nor waitlisted). */
  enrol?: boolean;
}

export interface AdmitInput extends AdmitClaim, AdmitOptions {
  voucherId: bigint;
}

/** Claims on one voucher segment, decided together within an admit call. */
export interface AdmitGroup {
  voucherId: bigint;
  /** The segment's shard (the voucher's own unless it has segments). */
  shard: number;
  claims: AdmitClaim[];
  /** Token buckets taken before any other check; none when absent. */
  limits?: ClaimRateLimits;
  /** false: a claim the segment has too few units for is SEGMENT_SHORT, not SOLD_OUT (nor waitlisted). */
  enrol?: boolean;
}

/**
 * Groups decided in one atomic call, in order, each claim as if after the ones before it: a result
 * per claim, per group. At most MAX_ADMIT_BATCH claims in all; on a Cluster every group's shard in
 * one slot.
 */
export type AdmitGroups = (groups: AdmitGroup[]) => Promise<AdmitResult[][]>;

/** Claims on one voucher (at most MAX_ADMIT_BATCH) in one atomic call: a result per claim. */
export type AdmitMany = (voucherId: bigint, claims: AdmitClaim[], options?: AdmitOptions) => Promise<AdmitResult[]>;

/** One voucher's claims as a call of their own. */
export const admitManyWith =
  (admitGroups: AdmitGroups, keys: Pick<KeySpace, 'shardOf'>): AdmitMany =>
  async (voucherId, claims, { limits, shard = keys.shardOf(voucherId), enrol } = {}) =>
    (await admitGroups([{ voucherId, shard, claims, limits, enrol }]))[0]!;

/** Most claims in one admit call: it runs in Redis for ~15 µs per claim and nothing else runs meanwhile. */
export const MAX_ADMIT_BATCH = 64;

export interface AdmitResult {
  code: AdmitCode;
  /** The new order id (ADMITTED) or the earlier one (REPLAYED, KEY_REUSED). */
  orderId: string;
  quantity: number;
  /** SOLD_OUT only: the user is on the voucher's waitlist. */
  waitlisted: boolean;
  /**
   * SOLD_OUT only, when no unit is left for anyone and no place on the waitlist either: the
   * version of the users who may hear something else (claims/sold-out-snapshot.ts).
   */
  closedAtVersion?: string;
  /** RATE_LIMITED only: ms until the buckets have a token again. */
  retryAfterMs?: number;
}

export interface AdmissionScripts {
  admit(input: AdmitInput): Promise<AdmitResult>;
  admitMany: AdmitMany;
  admitGroups: AdmitGroups;
  /** Takes a token from a claim's voucher and user buckets: 0, or the ms to wait (nothing taken). */
  takeTokens(voucherId: bigint, userId: bigint, limits: ClaimRateLimits): Promise<number>;
}

const ADMIT_KEYS_CACHED = 10_000;
/** Values per claim in admit-n.lua's answer (sk_claim_reply, lua/lib/admission.lua): code, orderId, quantity, waitlisted, closed, version. */
const ADMIT_REPLY_WIDTH = 6;

/** Claim `at`'s result in admit-n.lua's answer. */
function admitResult(flat: (string | number)[], at: number): AdmitResult {
  const code = flat[at] as AdmitCode;
  const orderId = String(flat[at + 1]);
  const quantity = Number(flat[at + 2]);
  if (code === AdmitCode.RATE_LIMITED) return { code, orderId, quantity: 0, waitlisted: false, retryAfterMs: quantity };
  const result: AdmitResult = { code, orderId, quantity, waitlisted: flat[at + 3] === 1 };
  if (flat[at + 4] === 1) result.closedAtVersion = String(flat[at + 5]);
  return result;
}

/**
 * The keys of a voucher segment that admit-n.lua and restock-8.lua both take first, in this order:
 * voucher hash, buyers hash, in-flight hash, order stream, waitlist, waitlist quantities.
 */
export function admissionKeys(keys: KeySpace, voucherId: bigint, shard: number): string[] {
  return [
    keys.voucher(voucherId, shard),
    keys.buyers(voucherId, shard),
    keys.inflight(shard),
    keys.orders(shard),
    keys.waitlist(voucherId, shard),
    keys.waitlistQuantities(voucherId, shard),
  ];
}

export function admissionScripts(calls: ScriptCalls, keys: KeySpace): AdmissionScripts {
  const admit = scriptCall(calls, 'admit');
  const bucket = scriptCall(calls, 'bucket');
  // The key names of a hot voucher's segment are built once, not on every claim.
  const admitKeys = new Map<bigint, { keys: string[]; id: string }[]>();
  const keysForAdmit = (voucherId: bigint, shard: number) => {
    let segments = admitKeys.get(voucherId);
    if (!segments) {
      if (admitKeys.size >= ADMIT_KEYS_CACHED) admitKeys.clear();
      admitKeys.set(voucherId, (segments = []));
    }
    let k = segments[shard];
    if (!k) {
      k = {
        keys: [...admissionKeys(keys, voucherId, shard), keys.idempotency(voucherId, shard), keys.voucherBucket(voucherId, shard)],
        id: voucherId.toString(),
      };
      segments[shard] = k;
    }
    return k;
  };
  const admitGroups: AdmitGroups = async (groups) => {
    const callKeys: string[] = [];
    const args: (string | number)[] = [];
    let claimCount = 0;
    for (const { voucherId, shard, claims, limits = NO_RATE_LIMITS, enrol = true } of groups) {
      if (claims.length === 0) throw new RangeError('an admit group without claims');
      claimCount += claims.length;
      const { voucher, user } = limits;
      const k = keysForAdmit(voucherId, shard);
      callKeys.push(...k.keys);
      // A user bucket's key only while the user bucket is on: otherwise it is most of the call's bytes.
      if (user.rate > 0) for (const c of claims) callKeys.push(keys.userBucket(voucherId, c.userId, shard));
      args.push(k.id, claims.length, voucher.rate, voucher.burst, user.rate, user.burst, enrol ? 1 : 0);
      for (const c of claims) args.push(c.userId.toString(), c.orderId.toString(), c.quantity, c.idempotencyKey ?? '', c.traceParent ?? '');
    }
    if (claimCount === 0 || claimCount > MAX_ADMIT_BATCH) throw new RangeError(`1 to ${MAX_ADMIT_BATCH} claims per admit call, got ${claimCount}`);
    const flat = (await admit(callKeys.length, ...callKeys, ...args)) as (string | number)[];
    if (flat.length !== claimCount * ADMIT_REPLY_WIDTH) throw new Error(`admit answered ${flat.length} values for ${claimCount} claim(s)`);
    let at = 0;
    return groups.map(({ claims }) =>
      claims.map(() => {
        const result = admitResult(flat, at);
        at += ADMIT_REPLY_WIDTH;
        return result;
      }),
    );
  };
  const admitMany = admitManyWith(admitGroups, keys);
  return {
    async admit({ voucherId, limits, shard, enrol, ...claim }) {
      return (await admitMany(voucherId, [claim], { limits, shard, enrol }))[0]!;
    },
    admitMany,
    admitGroups,
    async takeTokens(voucherId, userId, { voucher, user }) {
      return Number(await bucket(keys.voucherBucket(voucherId), keys.userBucket(voucherId, userId), voucher.rate, voucher.burst, user.rate, user.burst));
    },
  };
}
