// Claims on one voucher segment that reach this process in the same turn of the event loop go to
// Redis in ONE admit call (admit-n.lua decides them in arrival order, each atomically). Under load
// a turn carries several claims, and one call instead of several saves most of the per-call cost
// on both sides: in Node, ioredis' command object, promise and reply parsing; in Redis, the script
// call. A claim alone waits for nothing extra: the batch leaves in the same turn it would have.
import { type AdmitClaim, type AdmitResult, type ClaimRateLimits, MAX_ADMIT_BATCH, NO_RATE_LIMITS } from '../infra/redis/scripts/admission.js';
import type { Scripts } from '../infra/redis/scripts/index.js';

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

interface Batch {
  voucherId: bigint;
  options: AdmitOneOptions;
  waiting: Waiting[];
}

export function batchAdmissions(scripts: Pick<Scripts, 'admitMany'>, limits: ClaimRateLimits): AdmitOne {
  // Per voucher, per kind of call (segment, enrol, tokens): the claims of this turn.
  let pending = new Map<bigint, Map<number, Batch>>();

  const shares = new Map<number, ClaimRateLimits>([[1, limits]]);
  const limitsOf = (segments: number) => {
    let share = shares.get(segments);
    if (!share) {
      const { rate, burst } = limits.voucher;
      shares.set(segments, (share = { ...limits, voucher: { rate: rate / segments, burst: Math.max(1, burst / segments) } }));
    }
    return share;
  };

  const send = ({ voucherId, options: { shard, enrol = true, tokens = true, segments = 1 } }: Batch, waiting: Waiting[]) => {
    scripts.admitMany(voucherId, waiting.map((w) => w.claim), { limits: tokens ? limitsOf(segments) : NO_RATE_LIMITS, shard, enrol }).then(
      (results) => waiting.forEach((w, i) => w.resolve(results[i]!)),
      (err: unknown) => waiting.forEach((w) => w.reject(err)),
    );
  };

  const flush = () => {
    const due = pending;
    pending = new Map();
    for (const batches of due.values()) {
      for (const batch of batches.values()) {
        for (let i = 0; i < batch.waiting.length; i += MAX_ADMIT_BATCH) send(batch, batch.waiting.slice(i, i + MAX_ADMIT_BATCH));
      }
    }
  };

  return (voucherId, claim, options = {}) =>
    new Promise<AdmitResult>((resolve, reject) => {
      if (pending.size === 0) setImmediate(flush); // after the I/O callbacks of this turn, which may bring more claims
      let batches = pending.get(voucherId);
      if (!batches) pending.set(voucherId, (batches = new Map()));
      // One number per kind of call: no string built per claim on the hot path.
      const kind = ((options.shard ?? -1) + 1) * 4 + (options.enrol === false ? 2 : 0) + (options.tokens === false ? 1 : 0);
      let batch = batches.get(kind);
      if (!batch) batches.set(kind, (batch = { voucherId, options, waiting: [] }));
      batch.waiting.push({ claim, resolve, reject });
    });
}
