// The text of the pipeline's bulk statement (per batch, one multi-row INSERT of orders; the
// buyers' quantity rows are locked and upserted by vouchers/held-units.ts, built the same way),
// built by hand: on 500-row statements kysely's compile step plus the driver's client-side
// interpolation of thousands of parameters cost a fifth of the pipeline's CPU (measured on mysql2).
// Safe because every value passes through a literal function (infra/db/literals.ts, datetime
// below), which accept only integers, dates, and text escaped the dialect's way. Everything else
// stays kysely.
import type { SqlDialect } from '../infra/db/dialect.js';
import { int, text } from '../infra/db/literals.js';
import type { StoredOrderStatus } from '../infra/db/types.js';

/** One row of `orders` as the pipeline inserts it. */
export interface OrderRow {
  id: string;
  voucherId: bigint;
  userId: string;
  quantity: number;
  status: StoredOrderStatus;
  createdAt: Date;
  /** Payment window of a pending order, counted from `nowMs` of insertOrdersSql (null: failed). */
  paymentTimeoutSeconds: number | null;
  failureReason: string | null;
  /** price × quantity, minor units (0 with NO_CURRENCY when the voucher is unknown). */
  amount: number;
  currency: string;
  /** The claim's Idempotency-Key, unique per voucher and buyer (null: none, or taken by another order). */
  idempotencyKey: string | null;
  /** The traceparent later work on the order joins (null: untraced). */
  traceParent: string | null;
}

const DATETIME_MIN_MS = Date.UTC(1000, 0, 1);
const DATETIME_END_MS = Date.UTC(10000, 0, 1);

/** 'YYYY-MM-DD HH:MM:SS.mmm' in UTC, the session's time zone on both databases (mysql.ts, postgres.ts). Refuses what DATETIME cannot hold. */
function datetime(ms: number): string {
  if (!(ms >= DATETIME_MIN_MS && ms < DATETIME_END_MS)) throw new RangeError(`date out of DATETIME range: ${ms}`);
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  return `'${iso.slice(0, 10)} ${iso.slice(11, 23)}'`;
}

/** datetime() remembering its last answer: neighbouring rows share creation milliseconds and expiry. */
function lastDatetime(): (ms: number) => string {
  let lastMs = NaN;
  let last = '';
  return (ms) => (ms === lastMs ? last : ((lastMs = ms), (last = datetime(ms))));
}

/** `nowMs`: the database's clock at storage, where pending orders' payment windows start. */
export function insertOrdersSql(dialect: SqlDialect, rows: OrderRow[], nowMs: number): string {
  const created = lastDatetime();
  const expires = lastDatetime();
  // The trace column only in a batch with a traced order: an untraced batch's statement is unchanged.
  const traced = rows.some((r) => r.traceParent !== null);
  const values = rows.map(
    (r) =>
      `(${int(r.id)},${int(r.voucherId)},${int(r.userId)},${int(r.quantity)},${text(dialect, r.status)},${created(r.createdAt.getTime())},` +
      `${r.paymentTimeoutSeconds === null ? 'NULL' : expires(nowMs + r.paymentTimeoutSeconds * 1000)},${text(dialect, r.failureReason)},${int(r.amount)},${text(dialect, r.currency)},` +
      `${text(dialect, r.idempotencyKey)}${traced ? `,${text(dialect, r.traceParent)}` : ''})`,
  );
  const columns = `id, voucher_id, user_id, quantity, status, created_at, expires_at, failure_reason, amount, currency, idempotency_key${traced ? ', trace_parent' : ''}`;
  return `insert into orders (${columns}) values ${values.join(',')}`;
}
