import { Type } from 'typebox';
import type { Guards } from '../auth/guards.js';
import { type App, ErrorBody, IdParams } from '../http.js';
import type { ReconcileReport } from './reconciler.js';
import type { VoucherStats } from './stats.js';

const Count = Type.Integer({ minimum: 0 });
const StatsBody = Type.Object({
  initialStock: Type.Integer(),
  dbStock: Type.Integer(),
  redisStock: Type.Union([Type.Integer(), Type.Null()]),
  inFlight: Type.Integer(),
  orders: Type.Object({ pending_payment: Count, paid: Count, cancelled: Count, expired: Count, failed: Count }),
  waitlist: Count,
  deadLetters: Count,
});
const ReportBody = Type.Object({
  voucherId: Type.String(),
  verified: Type.Boolean(),
  repaired: Count,
  drift: Type.Array(Type.Object({ kind: Type.String(), detail: Type.String(), repaired: Type.Boolean() })),
});

export interface ConsistencyRouteDeps {
  guards: Guards;
  voucherStats(voucherId: bigint): Promise<VoucherStats>;
  reconcileVoucher(voucherId: bigint): Promise<ReconcileReport>;
}

export function registerConsistencyRoutes(app: App, { guards, voucherStats, reconcileVoucher }: ConsistencyRouteDeps) {
  app.get(
    '/api/vouchers/:id/stats',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['operations'],
        summary: 'Stock in both stores, orders by status, in-flight orders, waitlist and dead letters (admin)',
        params: IdParams,
        response: { 200: StatsBody, '4xx': ErrorBody },
      },
    },
    async (request) => voucherStats(BigInt(request.params.id)),
  );
  app.post(
    '/api/vouchers/:id/reconcile',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['operations'],
        summary: 'Reconcile one voucher now: drift found and repaired (admin)',
        description: '`verified: false` means Redis kept changing during the comparison; counts were not judged this time.',
        params: IdParams,
        response: { 200: ReportBody, '4xx': ErrorBody },
      },
    },
    async (request) => reconcileVoucher(BigInt(request.params.id)),
  );
}
