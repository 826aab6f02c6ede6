// The operations routes: a voucher's audit and its reconciliation on demand, beside the console's
// routes (console/routes.ts).
import { Type } from 'typebox';
import { registerConsoleRoutes, type ConsoleRouteDeps } from '../console/routes.js';
import { AppError } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import type { VoucherAudit } from './audit.js';
import type { ReconcileOptions, ReconcileReport } from './reconciler.js';

const Count = Type.Integer({ minimum: 0 });
const ReportBody = Type.Object({
  voucherId: Type.String(),
  verified: Type.Boolean(),
  repaired: Count,
  drift: Type.Array(Type.Object({ kind: Type.String(), detail: Type.String(), repaired: Type.Boolean() })),
  buyers: Type.Object({ compared: Count, all: Type.Boolean() }),
});
const ReconcileQuery = Type.Object({ allBuyers: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

const AuditBody = Type.Object({
  ok: Type.Boolean(),
  checks: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), ok: Type.Boolean(), problems: Type.Array(Type.String()) })),
  initialStock: Type.Integer(),
  dbStock: Type.Integer(),
  redisStock: Type.Union([Type.Integer(), Type.Null()]),
  sold: Type.Integer(),
  orders: Type.Record(Type.String(), Type.Integer()),
  inflight: Type.Integer(),
});
const AuditRequest = Type.Object(
  { admitted: Type.Optional(Type.Array(Type.String({ pattern: '^[1-9][0-9]{0,19}$' }), { maxItems: 2_000_000 })) },
  { additionalProperties: false },
);

export interface ConsistencyRouteDeps extends ConsoleRouteDeps {
  reconcileVoucher(voucherId: bigint, options: ReconcileOptions): Promise<ReconcileReport>;
  /** `admitted`: order ids a client saw admitted; each must be stored (I3). */
  auditVoucher(voucherId: bigint, admitted?: string[]): Promise<VoucherAudit | null>;
}

function registerAuditRoutes(app: App, { guards, auditVoucher }: ConsistencyRouteDeps) {
  const audit = async (id: string, admitted?: string[]) => {
    const result = await auditVoucher(BigInt(id), admitted);
    if (!result) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${id} not found`);
    return result;
  };
  const auditSchema = {
    tags: ['operations'],
    summary: 'The invariants of the voucher on both stores, safe on a live system (admin)',
    description: 'POST with {admitted: [orderId…]} also checks that each of those orders is stored (I3).',
    params: IdParams,
    response: { 200: AuditBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
  };
  app.get('/api/vouchers/:id/audit', { onRequest: guards.admin, schema: auditSchema }, async (request) => audit(request.params.id));
  const auditPostSchema = {
    ...auditSchema,
    body: AuditRequest,
    response: { 200: AuditBody, ...apiErrorAnswers({ ...ANSWER.body, ...ANSWER.admin, ...ANSWER.voucherNotFound, 413: 'PAYLOAD_TOO_LARGE: the body exceeds 64 MiB' }) },
  };
  app.post('/api/vouchers/:id/audit', { onRequest: guards.admin, bodyLimit: 64 * 1024 * 1024, schema: auditPostSchema }, async (request) =>
    audit(request.params.id, request.body.admitted),
  );
}

function registerReconcileRoute(app: App, { guards, reconcileVoucher }: ConsistencyRouteDeps) {
  const schema = {
    tags: ['operations'],
    summary: 'Reconcile one voucher now: drift found and repaired (admin)',
    description:
      '`verified: false` means Redis kept changing during the comparison; counts were not judged this time. Stock and orders in flight are compared every time; buyer counts a slice of at most 10,000 per call, the next slice the next time (`buyers`), or all of them with `allBuyers=true`.',
    params: IdParams,
    querystring: ReconcileQuery,
    response: { 200: ReportBody, ...apiErrorAnswers({ ...ANSWER.body, ...ANSWER.admin, ...ANSWER.voucherNotFound }) },
  };
  app.post('/api/vouchers/:id/reconcile', { onRequest: guards.admin, schema }, async (request) =>
    reconcileVoucher(BigInt(request.params.id), { allBuyers: request.query.allBuyers }),
  );
}

export function registerConsistencyRoutes(app: App, deps: ConsistencyRouteDeps) {
  registerAuditRoutes(app, deps);
  registerConsoleRoutes(app, deps);
  registerReconcileRoute(app, deps);
}
