// Snowflake worker-id leases: lease-2.lua takes or renews one, lease-end-2.lua gives it back.
import type { KeySpace } from '../keys.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** lease-2.lua's answer (HELD_ELSEWHERE) when another owner holds the lease; else the high-water timestamp, ≥ 0. */
export const LEASE_HELD_ELSEWHERE = -1;
/** lease-end-2.lua's answer when the caller held the lease (ENDED). */
const LEASE_ENDED = 1;

export interface WorkerIdScripts {
  /** High-water timestamp to start from, or LEASE_HELD_ELSEWHERE. */
  lease(workerId: number, owner: string, ttlMs: number, issuedMs: number): Promise<number>;
  /** Gives the lease back, keeping `issuedMs` as the high water; false when `owner` did not hold it. */
  endLease(workerId: number, owner: string, issuedMs: number): Promise<boolean>;
}

export function workerIdScripts(calls: ScriptCalls, keys: KeySpace): WorkerIdScripts {
  const lease = scriptCall(calls, 'lease');
  const leaseEnd = scriptCall(calls, 'lease-end');
  return {
    async lease(workerId, owner, ttlMs, issuedMs) {
      return Number(await lease(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, ttlMs, issuedMs));
    },
    async endLease(workerId, owner, issuedMs) {
      return (await leaseEnd(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, issuedMs)) === LEASE_ENDED;
    },
  };
}
