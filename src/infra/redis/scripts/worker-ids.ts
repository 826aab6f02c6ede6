// Snowflake worker-id leases: lease-2.lua takes or renews one, release-2.lua gives it back.
import type { KeySpace } from '../keys.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** lease-2.lua's answer when another owner holds the lease (else the high-water timestamp, ≥ 0). */
export const LEASE_HELD_ELSEWHERE = -1;
/** release-2.lua's answer when the caller held the lease. */
const RELEASED = 1;

export interface WorkerIdScripts {
  /** High-water timestamp to start from, or LEASE_HELD_ELSEWHERE. */
  lease(workerId: number, owner: string, ttlMs: number, issuedMs: number): Promise<number>;
  release(workerId: number, owner: string, issuedMs: number): Promise<boolean>;
}

export function workerIdScripts(calls: ScriptCalls, keys: KeySpace): WorkerIdScripts {
  const lease = scriptCall(calls, 'lease');
  const release = scriptCall(calls, 'release');
  return {
    async lease(workerId, owner, ttlMs, issuedMs) {
      return Number(await lease(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, ttlMs, issuedMs));
    },
    async release(workerId, owner, issuedMs) {
      return (await release(keys.workerLease(workerId), keys.workerHighWater(workerId), owner, issuedMs)) === RELEASED;
    },
  };
}
