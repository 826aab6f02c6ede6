// Runs reconciliation every RECONCILE_INTERVAL_MS, one runner at a time across all processes.
// (Being written; this fixes the interface.)
import type { Logger } from 'pino';
import type { Reconciler } from './reconciler.js';

export interface ReconcileScheduleDeps {
  redisUrl: string;
  prefix: string;
  intervalMs: number;
  reconciler: Reconciler;
  log: Logger;
}

export class ReconcileSchedule {
  static async start(_deps: ReconcileScheduleDeps): Promise<ReconcileSchedule> {
    return new ReconcileSchedule();
  }

  async close(): Promise<void> {}
}
