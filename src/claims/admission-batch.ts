// Claims on one voucher that reach this process in the same turn of the event loop go to Redis in
// ONE admit call (admit-n.lua decides them in arrival order, each atomically). Under load a turn
// carries several claims, and one call instead of several saves most of the per-call cost on both
// sides: in Node, ioredis' command object, promise and reply parsing; in Redis, the script call.
// A claim alone waits for nothing extra: the batch leaves in the same turn it would have.
import { type AdmitClaim, type AdmitResult, type ClaimRateLimits, MAX_ADMIT_BATCH } from '../infra/redis/scripts/admission.js';
import type { Scripts } from '../infra/redis/scripts/index.js';

interface Waiting {
  claim: AdmitClaim;
  resolve(result: AdmitResult): void;
  reject(err: unknown): void;
}

export type AdmitOne = (voucherId: bigint, claim: AdmitClaim) => Promise<AdmitResult>;

export function batchAdmissions(scripts: Pick<Scripts, 'admitMany'>, limits: ClaimRateLimits): AdmitOne {
  let pending = new Map<bigint, Waiting[]>();

  const send = (voucherId: bigint, batch: Waiting[]) => {
    scripts.admitMany(voucherId, batch.map((w) => w.claim), limits).then(
      (results) => batch.forEach((w, i) => w.resolve(results[i]!)),
      (err: unknown) => batch.forEach((w) => w.reject(err)),
    );
  };

  const flush = () => {
    const due = pending;
    pending = new Map();
    for (const [voucherId, waiting] of due) {
      for (let i = 0; i < waiting.length; i += MAX_ADMIT_BATCH) send(voucherId, waiting.slice(i, i + MAX_ADMIT_BATCH));
    }
  };

  return (voucherId, claim) =>
    new Promise<AdmitResult>((resolve, reject) => {
      if (pending.size === 0) setImmediate(flush); // after the I/O callbacks of this turn, which may bring more claims
      let waiting = pending.get(voucherId);
      if (!waiting) pending.set(voucherId, (waiting = []));
      waiting.push({ claim, resolve, reject });
    });
}
