// Operator routes: stats and on-demand reconciliation. (Being written.)
import type { Guards } from '../auth/guards.js';
import type { App } from '../http.js';
import type { ReconcileReport } from './reconciler.js';
import type { VoucherStats } from './stats.js';

export interface ConsistencyRouteDeps {
  guards: Guards;
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  reconcileVoucher(voucherId: bigint): Promise<ReconcileReport>;
}

export function registerConsistencyRoutes(_app: App, _deps: ConsistencyRouteDeps) {}
