// Sold-out fast path. Once Redis has said that a seckill voucher has no unit left for anyone and
// no waitlist place either (admit's `closed`), this process answers the voucher's claims SOLD_OUT
// from memory, without Redis, for SOLD_OUT_CACHE_MS. Units coming back are announced
// (units-back-broadcast.ts) and clear the flag at once; the expiry bounds a lost announcement,
// since a flag never outlives the Redis answer it was made from by more than its lifetime.
//
// Two kinds of claim must still hear what Redis would say: a claim with an Idempotency-Key from a
// user who has an idempotency record (it may be a retry of their admission: the same order id
// must come back), and any claim on a waitlist voucher (`waitlisted` depends on the user). So the
// flag comes with a snapshot of those users, read in short steps between two reads of a version
// that moves whenever either set grows or the state is rebuilt (sold-out-snapshot.ts), and read
// again when Redis answers with another version; until it is there, when it would be too large
// to hold, or when the sets kept growing while it was read, those claims go to Redis. (A user at
// the per-user limit hears SOLD_OUT here, not LIMIT_EXCEEDED: both are true, and neither takes
// anything.)
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { Voucher } from '../vouchers/voucher.js';
import { readSoldOutSnapshot } from './sold-out-snapshot.js';
import type { UnitsBack } from './units-back-broadcast.js';

/** Bounds the snapshot each process holds (Redis is read for it in short steps, whatever its size). */
const SNAPSHOT_MAX_USERS = 20_000;
const MAX_VOUCHERS = 10_000;

export interface SoldOutAnswer {
  waitlisted: boolean;
}

export interface SoldOutCache {
  /** The SOLD_OUT answer from memory, or null when Redis must decide. */
  answer(voucher: Voucher, userId: bigint, hasIdempotencyKey: boolean): SoldOutAnswer | null;
  /**
   * True when a claim without Idempotency-Key gets SOLD_OUT, waitlisted: false, whoever sends it:
   * the voucher is flagged and has neither a waitlist nor claim tokens.
   */
  soldOutForAnyone(voucherId: bigint): boolean;
  /**
   * True when a claim with an Idempotency-Key from `userId` gets SOLD_OUT, waitlisted: false: the
   * voucher is sold out for anyone and its snapshot shows no idempotency record of that user.
   */
  soldOutForKeyed(voucherId: bigint, userId: bigint): boolean;
  /** True while the voucher is flagged: Redis said no unit is left for anyone (in any segment). */
  flagged(voucherId: bigint): boolean;
  /** Taken just before asking Redis, for `remember`. */
  stamp(): number;
  /** Redis, asked at `askedAt`, answered SOLD_OUT for everyone, its users at `version` (AdmitResult.closedAtVersion). */
  remember(voucher: Voucher, askedAt: number, version: string): void;
}

interface Snapshot {
  version: string;
  /** null: too many users to hold; claims that need the snapshot go to Redis. */
  keyed: Set<string> | null;
  waiting: Set<string> | null;
}

interface Flag {
  /** Sold out until then (performance.now() ms). */
  until: number;
  /** The voucher has neither a waitlist nor claim tokens. */
  anyone: boolean;
  /** The last time units came back; answers asked for before it are stale. */
  forgottenAt: number;
  snapshot: Snapshot | null;
  loadedAt: number;
  loading: boolean;
}

const WAITLISTED: SoldOutAnswer = { waitlisted: true };
const NOT_WAITLISTED: SoldOutAnswer = { waitlisted: false };

export interface SoldOutCacheDeps {
  ttlMs: number;
  redis: RedisClient;
  keys: KeySpace;
  unitsBack: Pick<UnitsBack, 'onBack' | 'listening'>;
  log: Logger;
}

export function createSoldOutCache(deps: SoldOutCacheDeps): SoldOutCache {
  return new SoldOutFlags(deps);
}

class SoldOutFlags implements SoldOutCache {
  private readonly deps: SoldOutCacheDeps;
  private readonly flags = new Map<bigint, Flag>();

  constructor(deps: SoldOutCacheDeps) {
    this.deps = deps;
    deps.unitsBack.onBack((voucherId) => this.unitsBack(voucherId));
  }

  answer(voucher: Voucher, userId: bigint, hasIdempotencyKey: boolean): SoldOutAnswer | null {
    const flag = this.standing(voucher.id);
    if (!flag) return null;
    if (!hasIdempotencyKey && !voucher.waitlist) return NOT_WAITLISTED;
    const s = flag.snapshot;
    if (!s?.keyed || !s.waiting) return null;
    const user = userId.toString();
    if (hasIdempotencyKey && s.keyed.has(user)) return null;
    return s.waiting.has(user) ? WAITLISTED : NOT_WAITLISTED;
  }

  soldOutForAnyone(voucherId: bigint): boolean {
    return this.standing(voucherId)?.anyone === true;
  }

  soldOutForKeyed(voucherId: bigint, userId: bigint): boolean {
    const flag = this.standing(voucherId);
    const keyed = flag?.anyone ? flag.snapshot?.keyed : null;
    return keyed ? !keyed.has(userId.toString()) : false;
  }

  flagged(voucherId: bigint): boolean {
    return this.standing(voucherId) !== undefined;
  }

  stamp(): number {
    return performance.now();
  }

  remember(voucher: Voucher, askedAt: number, version: string): void {
    const { ttlMs, unitsBack } = this.deps;
    // Flags only while announcements from other processes can reach us (else a flag could
    // miss the one that clears it, and wait for its expiry).
    if (ttlMs === 0 || !unitsBack.listening()) return;
    const flag = this.flagOf(voucher.id);
    if (askedAt <= flag.forgottenAt) return; // Redis may have answered before units came back
    flag.until = Math.max(flag.until, askedAt + ttlMs);
    flag.anyone = !voucher.waitlist && !voucher.claimToken;
    if (flag.snapshot && flag.snapshot.version !== version) flag.snapshot = null;
    // A segmented voucher keeps its users' records in their home segments: no one snapshot
    // holds them all, so the claims that need one go to Redis (their home segment only).
    if (voucher.segmentShards) flag.snapshot = { version, keyed: null, waiting: null };
    // At most one snapshot read per voucher and flag lifetime, whatever the traffic: each read
    // costs Redis time in proportion to the lists.
    if (!flag.snapshot && !flag.loading && performance.now() - flag.loadedAt >= ttlMs) void this.load(voucher.id, flag);
  }

  /** Units are back: ask Redis again. The mark stays, so an answer already on its way is not taken for a fresh one. */
  private unitsBack(voucherId: bigint): void {
    const flag = this.flagOf(voucherId);
    flag.until = 0;
    flag.snapshot = null;
    flag.forgottenAt = performance.now();
  }

  private flagOf(voucherId: bigint): Flag {
    let flag = this.flags.get(voucherId);
    if (!flag) {
      if (this.flags.size >= MAX_VOUCHERS) this.flags.delete(this.flags.keys().next().value as bigint);
      flag = { until: 0, anyone: false, forgottenAt: -Infinity, snapshot: null, loadedAt: -Infinity, loading: false };
      this.flags.set(voucherId, flag);
    }
    return flag;
  }

  /** The voucher's flag while it stands. */
  private standing(voucherId: bigint): Flag | undefined {
    const flag = this.flags.get(voucherId);
    return flag !== undefined && flag.until > performance.now() ? flag : undefined;
  }

  private async load(voucherId: bigint, flag: Flag): Promise<void> {
    const { redis, keys, log } = this.deps;
    const startedAt = performance.now();
    flag.loading = true;
    flag.loadedAt = startedAt;
    try {
      const s = await readSoldOutSnapshot(redis, keys, voucherId, SNAPSHOT_MAX_USERS);
      if (startedAt <= flag.forgottenAt) return; // units came back meanwhile
      // Still growing: no snapshot, and a later flag lifetime reads again.
      if (!s) return;
      flag.snapshot = s.tooLarge
        ? { version: s.version, keyed: null, waiting: null }
        : { version: s.version, keyed: s.keyedUsers, waiting: s.waitingUsers };
    } catch (err) {
      log.warn({ err, voucherId: voucherId.toString() }, 'sold-out snapshot not read; those claims go to Redis');
    } finally {
      flag.loading = false;
    }
  }
}
