// The claim step: admit-n.lua (a batch of seckill claims on one voucher), bucket-2.lua (the token
// buckets of a limited or common claim) and the sold-out snapshot (who may hear more than SOLD_OUT).
import type { RedisClient } from '../client.js';
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
   * version of the users who may hear something else (see SoldOutSnapshot).
   */
  closedAtVersion?: string;
  /** RATE_LIMITED only: ms until the buckets have a token again. */
  retryAfterMs?: number;
}

/**
 * Who, on a sold-out voucher, may get another answer than a plain SOLD_OUT: the users with an
 * idempotency record (a retry may be a replay) and the users on the waitlist, as they were at
 * `version`, "builtAt.listAdditions" of the voucher hash as admit-n.lua answers it: builtAt
 * changes when the state is rebuilt, listAdditions whenever admit adds a user to either list.
 * (Restock only takes users off the waitlist, after which it is not full, so no sold-out flag
 * stands until an enrolment has moved the version again.)
 */
export type SoldOutSnapshot =
  | { version: string; tooLarge: false; keyedUsers: Set<string>; waitingUsers: Set<string> }
  | { version: string; tooLarge: true };

/**
 * Elements per HSCAN / ZSCAN step of a snapshot read: Redis runs one command at a time, and each
 * step is short enough that no claim waits long behind it.
 */
const SNAPSHOT_STEP = 250;
/** Walks of lists that keep growing before the read gives up. */
const SNAPSHOT_ATTEMPTS = 3;

export interface AdmissionScripts {
  admit(input: AdmitInput): Promise<AdmitResult>;
  /**
   * Claims on one voucher (at most MAX_ADMIT_BATCH) in one atomic call, decided in order as if one
   * after the other: a result per claim.
   */
  admitMany(voucherId: bigint, claims: AdmitClaim[], options?: AdmitOptions): Promise<AdmitResult[]>;
  /** Takes a token from a claim's voucher and user buckets: 0, or the ms to wait (nothing taken). */
  takeTokens(voucherId: bigint, userId: bigint, limits: ClaimRateLimits): Promise<number>;
}

/** Plain commands, not a script: see readSoldOutSnapshot. */
export interface SoldOutSnapshots {
  /**
   * Users with idempotency records and waiting users of a voucher (of one segment), unless more
   * than `max`; null when the lists grew during every attempt to read them.
   */
  soldOutSnapshot(voucherId: bigint, max: number): Promise<SoldOutSnapshot | null>;
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

/** One step of a SCAN-family walk from `cursor`: the next cursor, and members paired with values. */
type ScanStep = (cursor: string) => Promise<[cursor: string, elements: string[]]>;

/** Hands `add` every member of a walk to its end; false as soon as `full()`, the rest unread. */
async function scanAll(step: ScanStep, add: (member: string) => void, full: () => boolean): Promise<boolean> {
  let cursor = '0';
  do {
    const [next, flat] = await step(cursor);
    for (let i = 0; i < flat.length; i += 2) add(flat[i]!);
    if (full()) return false;
    cursor = next;
  } while (cursor !== '0');
  return true;
}

/**
 * The sold-out snapshot in steps of SNAPSHOT_STEP elements: one script reading 20,000 records
 * held Redis for 29–65 ms, and every claim waited; a step holds it for 0.3–0.6 ms. The version
 * is read before and after the walk of both lists; unchanged, nothing was added to either
 * meanwhile, nor was the state rebuilt. Removals may have happened, but HSCAN and ZSCAN return
 * every element present for the whole walk, so the result holds every user still listed at the
 * end, perhaps some who left meanwhile, and none who was not listed at the start: no staler than
 * one atomic read at the start. That is safe: a keyed user who is no longer one only has their
 * claims go to Redis, and a user leaves the waitlist only when promoted, when units coming back
 * clear the flag. (ZRANGE by ranks would not do: a removal shifts the ranks, and the next range
 * skips a user who stayed.)
 */
async function readSoldOutSnapshot(redis: RedisClient, keys: KeySpace, voucherId: bigint, max: number): Promise<SoldOutSnapshot | null> {
  const idempotency = keys.idempotency(voucherId);
  const waitlist = keys.waitlist(voucherId);
  const versionNow = async () => {
    const [builtAt, listAdditions] = await redis.hmget(keys.voucher(voucherId), 'builtAt', 'listAdditions');
    return `${builtAt ?? ''}.${listAdditions ?? '0'}`;
  };
  const [first, records, places] = await Promise.all([versionNow(), redis.hlen(idempotency), redis.zcard(waitlist)]);
  let version = first;
  // A walk costs by records (a user may hold several): more than max of them, no walk at all.
  if (records + places > max) return { version, tooLarge: true };
  for (let attempt = 0; attempt < SNAPSHOT_ATTEMPTS; attempt++) {
    // Sets: a scan may return an element twice (while the hash or set is resized).
    const keyedUsers = new Set<string>();
    const waitingUsers = new Set<string>();
    const full = () => keyedUsers.size + waitingUsers.size > max;
    const walked =
      (await scanAll((c) => redis.hscan(idempotency, c, 'COUNT', SNAPSHOT_STEP), (field) => keyedUsers.add(field.slice(0, field.indexOf(':'))), full)) &&
      (await scanAll((c) => redis.zscan(waitlist, c, 'COUNT', SNAPSHOT_STEP), (user) => waitingUsers.add(user), full));
    // The lists grew past the cap during the walk: too large to hold, whatever the version.
    if (!walked) return { version, tooLarge: true };
    const after = await versionNow();
    if (after === version) return { version, tooLarge: false, keyedUsers, waitingUsers };
    version = after;
  }
  return null;
}

export const soldOutSnapshots = (redis: RedisClient, keys: KeySpace): SoldOutSnapshots => ({
  soldOutSnapshot: (voucherId, max) => readSoldOutSnapshot(redis, keys, voucherId, max),
});

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
  const admitMany: AdmissionScripts['admitMany'] = async (voucherId, claims, { limits = NO_RATE_LIMITS, shard = keys.shardOf(voucherId), enrol = true } = {}) => {
    if (claims.length === 0 || claims.length > MAX_ADMIT_BATCH) throw new RangeError(`1 to ${MAX_ADMIT_BATCH} claims per admit call, got ${claims.length}`);
    const { voucher, user } = limits;
    const k = keysForAdmit(voucherId, shard);
    // A user bucket's key only while the user bucket is on: otherwise it is most of the call's bytes.
    const userBuckets = user.rate > 0 ? claims.map((c) => keys.userBucket(voucherId, c.userId, shard)) : [];
    const args: (string | number)[] = [k.keys.length + userBuckets.length, ...k.keys, ...userBuckets];
    args.push(k.id, voucher.rate, voucher.burst, user.rate, user.burst, enrol ? 1 : 0);
    for (const c of claims) args.push(c.userId.toString(), c.orderId.toString(), c.quantity, c.idempotencyKey ?? '');
    const flat = (await admit(...args)) as (string | number)[];
    if (flat.length !== claims.length * ADMIT_REPLY_WIDTH) throw new Error(`admit answered ${flat.length} values for ${claims.length} claim(s)`);
    return claims.map((_, i) => admitResult(flat, i * ADMIT_REPLY_WIDTH));
  };
  return {
    async admit({ voucherId, limits, shard, enrol, ...claim }) {
      return (await admitMany(voucherId, [claim], { limits, shard, enrol }))[0]!;
    },
    admitMany,
    async takeTokens(voucherId, userId, { voucher, user }) {
      return Number(await bucket(keys.voucherBucket(voucherId), keys.userBucket(voucherId, userId), voucher.rate, voucher.burst, user.rate, user.burst));
    },
  };
}
