// Verification after a master change: verify-1.lua tells which master holds a voucher segment and
// whether the segment was verified against the database on it, and stamps it verified.
import type { KeySpace } from '../keys.js';
import { type ScriptCalls, scriptCall } from './loader.js';

export interface SegmentMaster {
  /** The replication id of the master that holds the segment now. */
  master: string;
  /** The segment's state was built or verified on that master. */
  verified: boolean;
}

export interface VerificationScripts {
  masterOf(voucherId: bigint, shard: number): Promise<SegmentMaster>;
  /** Stamps the segment verified on `master`; false when another master holds it by now, or its state is gone. */
  stampVerified(voucherId: bigint, shard: number, master: string): Promise<boolean>;
}

/** verify-1.lua's argument and answers, named as there. */
const ASK = '';
const VERIFIED = 1;
const STAMPED = 1;

export function verificationScripts(calls: ScriptCalls, keys: KeySpace): VerificationScripts {
  const verify = scriptCall(calls, 'verify');
  return {
    async masterOf(voucherId, shard) {
      const [master, verified] = (await verify(keys.voucher(voucherId, shard), ASK)) as [string, number];
      return { master, verified: verified === VERIFIED };
    },
    async stampVerified(voucherId, shard, master) {
      return (await verify(keys.voucher(voucherId, shard), master)) === STAMPED;
    },
  };
}
