// Seckill claims that reach this process in the same turn of the event loop go to Redis in ONE
// admit call per call scope (admit-n.lua decides them in arrival order, each atomically): every
// shard on a single server (or Sentinel's master), one shard's slot on a Cluster (a script's keys
// live in one slot there). Within the call the claims are grouped per voucher segment. Under load
// a turn carries several claims, spread over as many vouchers as a shop has sales, and one call
// instead of several saves most of the per-call cost on both sides: in Node, ioredis' command
// object, promise and reply parsing; in Redis, the script call, the master check and the clock. A
// claim alone waits for nothing extra: the batch leaves in the same turn it would have.
import { type AdmitClaim, type AdmitGroups, type AdmitResult, type ClaimRateLimits, MAX_ADMIT_BATCH, NO_RATE_LIMITS } from '../infra/redis/scripts/admission.js';
import type { KeySpace } from '../infra/redis/keys.js';

interface Waiting {
  claim: AdmitClaim;
  resolve(result: AdmitResult): void;
  reject(err: unknown): void;
}

export interface AdmitOneOptions {
  /** The segment's shard; the voucher's own when absent. */
  shard?: number;
  /** false: SEGMENT_SHORT rather than SOLD_OUT when the segment has too few units (AdmitOptions). */
  enrol?: boolean;
  /** false: the claim took its rate-limit tokens already (asked again after a borrow). */
  tokens?: boolean;
  /** The voucher's segments: each takes its share of the voucher's bucket. */
  segments?: number;
}

export type AdmitOne = (voucherId: bigint, claim: AdmitClaim, options?: AdmitOneOptions) => Promise<AdmitResult>;

export interface BatchDeps {
  admitGroups: AdmitGroups;
  keys: Pick<KeySpace, 'shardOf'>;
  limits: ClaimRateLimits;
  /** true on a Cluster: a call holds the claims of one shard only. */
  callPerShard: boolean;
}

/** The claims of this turn on one voucher segment, of one kind of call (enrol, tokens). */
interface Batch {
  voucherId: bigint;
  shard: number;
  options: AdmitOneOptions;
  waiting: Waiting[];
}

/** A batch's claims (or a part of them) in one call. */
interface Part {
  batch: Batch;
  waiting: Waiting[];
}

export function batchAdmissions({ admitGroups, keys, limits, callPerShard }: BatchDeps): AdmitOne {
  // Per call scope, per voucher, per kind of group (shard, enrol, tokens): the claims of this turn.
  let pending = new Map<number, Map<bigint, Map<number, Batch>>>();

  const shares = new Map<number, ClaimRateLimits>([[1, limits]]);
  const limitsOf = (segments: number) => {
    let share = shares.get(segments);
    if (!share) {
      const { rate, burst } = limits.voucher;
      shares.set(segments, (share = { ...limits, voucher: { rate: rate / segments, burst: Math.max(1, burst / segments) } }));
    }
    return share;
  };

  const send = (parts: Part[]) => {
    const groups = parts.map(({ batch: { voucherId, shard, options: { enrol = true, tokens = true, segments = 1 } }, waiting }) => ({
      voucherId,
      shard,
      claims: waiting.map((w) => w.claim),
      limits: tokens ? limitsOf(segments) : NO_RATE_LIMITS,
      enrol,
    }));
    admitGroups(groups).then(
      (results) => parts.forEach(({ waiting }, g) => waiting.forEach((w, i) => w.resolve(results[g]![i]!))),
      (err: unknown) => parts.forEach(({ waiting }) => waiting.forEach((w) => w.reject(err))),
    );
  };

  // Each scope's batches in calls of at most MAX_ADMIT_BATCH claims, in arrival order per batch.
  const flush = () => {
    const due = pending;
    pending = new Map();
    for (const vouchers of due.values()) {
      let call: Part[] = [];
      let size = 0;
      for (const batches of vouchers.values()) {
        for (const batch of batches.values()) {
          for (let i = 0; i < batch.waiting.length; ) {
            const take = Math.min(MAX_ADMIT_BATCH - size, batch.waiting.length - i);
            call.push({ batch, waiting: take === batch.waiting.length ? batch.waiting : batch.waiting.slice(i, i + take) });
            size += take;
            i += take;
            if (size === MAX_ADMIT_BATCH) {
              send(call);
              call = [];
              size = 0;
            }
          }
        }
      }
      if (size > 0) send(call);
    }
  };

  return (voucherId, claim, options = {}) =>
    new Promise<AdmitResult>((resolve, reject) => {
      if (pending.size === 0) setImmediate(flush); // after the I/O callbacks of this turn, which may bring more claims
      const shard = options.shard ?? keys.shardOf(voucherId);
      const scope = callPerShard ? shard : 0;
      let vouchers = pending.get(scope);
      if (!vouchers) pending.set(scope, (vouchers = new Map()));
      let batches = vouchers.get(voucherId);
      if (!batches) vouchers.set(voucherId, (batches = new Map()));
      // One number per kind of group: no string built per claim on the hot path.
      const kind = (shard + 1) * 4 + (options.enrol === false ? 2 : 0) + (options.tokens === false ? 1 : 0);
      let batch = batches.get(kind);
      if (!batch) batches.set(kind, (batch = { voucherId, shard, options, waiting: [] }));
      batch.waiting.push({ claim, resolve, reject });
    });
}
