// Every script's typed wrapper, grouped by the step that uses it, on one connection. Features take
// the narrow part they need (e.g. Pick<Scripts, 'settle'>).
import type { RedisClient } from '../client.js';
import type { KeySpace } from '../keys.js';
import { type AdmissionScripts, admissionScripts } from './admission.js';
import { commandOf, loadScripts } from './loader.js';
import { type MoveScripts, moveScripts } from './moves.js';
import { type PresenceScripts, presenceScripts } from './presence.js';
import { type QueueScripts, queueScripts } from './queue.js';
import { type ReconcileScripts, reconcileScripts } from './reconcile.js';
import { type SettleScripts, settleScripts } from './settle.js';
import { type VerificationScripts, verificationScripts } from './verification.js';
import { type VoucherStateScripts, voucherStateScripts } from './voucher-state.js';
import { type WorkerIdScripts, workerIdScripts } from './worker-ids.js';

export type Scripts = AdmissionScripts & VoucherStateScripts & WorkerIdScripts & SettleScripts & ReconcileScripts & MoveScripts & VerificationScripts & PresenceScripts & QueueScripts;

/**
 * Script commands whose callers batch already (client.ts leaves them out of auto-pipelining).
 * They are also the ones with a varying number of keys (`name-n.lua`), whose first argument is
 * that number, not a key: on a cluster, ioredis would group them into another slot's pipeline by
 * it, and the whole pipeline would fail ("same slots allocation group").
 */
export const SELF_BATCHED_COMMANDS = [commandOf('admit'), commandOf('settle')] as const;

export function createScripts(redis: RedisClient, keys: KeySpace): Scripts {
  const calls = loadScripts(redis);
  return {
    ...admissionScripts(calls, keys),
    ...voucherStateScripts(calls, keys),
    ...workerIdScripts(calls, keys),
    ...settleScripts(calls, keys),
    ...reconcileScripts(calls, keys),
    ...moveScripts(calls, keys),
    ...verificationScripts(calls, keys),
    ...presenceScripts(calls),
    ...queueScripts(calls, keys),
  };
}
