// The verdict of a run: the deployment's own audit of both stores (the invariants of docs/design.md ("Invariants"))
// read into oversold / lost / duplicated counts, and cross-checked against what the buyers were
// told, counted on the client's side. Everything here is expected to be zero / true.
import type { DrawVerdict } from '../queue/verify.js';
import type { VoucherAudit, VoucherStats } from './deployment.js';
import type { PaymentReport } from './payments.js';
import { seconds } from './format.js';
import type { ClientCounts } from './recorder.js';

export interface VerdictCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Verdict {
  ok: boolean;
  /** Units sold beyond the initial stock (or negative database stock). */
  oversold: number;
  /** Orders a buyer was given that the database does not hold (a lower bound past the audit's first 10). */
  lost: number;
  /** Order ids stored twice, given to two buyers, or a retry with the same key answered with another order. */
  duplicated: number;
  /** Units of the voucher still unsold when the sale was audited. */
  unsold: number;
  checks: VerdictCheck[];
}

/** The voucher before the run: what was already sold and stored there. */
export interface Baseline {
  available: number;
  stats: VoucherStats;
}

export interface VerdictInput {
  baseline: Baseline;
  perUserLimit: number;
  client: ClientCounts;
  /** Drain lag in ms; null when the orders were not all stored in time. */
  drainLagMs: number | null;
  audit: VoucherAudit;
  payments?: { report: PaymentReport; audit: VoucherAudit };
  /** A queued drop: the draw re-checked from what was published, and the places admitted by then. */
  queue?: { draw: DrawVerdict; placesAdmitted: number };
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
const released = (orders: Record<string, number>) => (orders.expired ?? 0) + (orders.cancelled ?? 0) + (orders.failed ?? 0);

function auditCheck(audit: VoucherAudit, when: string): VerdictCheck[] {
  return audit.checks.map((c) => ({ name: `${c.id} ${c.name} (${when})`, ok: c.ok, detail: c.ok ? 'ok' : c.problems.join('; ') }));
}

export function judge({ baseline, perUserLimit, client, drainLagMs, audit, payments, queue }: VerdictInput): Verdict {
  const before = baseline.stats;
  const soldBefore = before.initialStock - before.dbStock;
  const storedNow = sum(audit.orders) - sum(before.orders);
  // Units that came back during the run (expired, cancelled, failed orders) may be handed out again.
  const returned = released(audit.orders) - released(before.orders);
  const notStored = audit.checks.find((c) => c.id === 'I3')?.problems.filter((p) => /not stored/.test(p)).length ?? 0;

  const oversold = Math.max(0, audit.sold - audit.initialStock, -audit.dbStock);
  const lost = Math.max(notStored, client.orders - storedNow);
  // Stored twice an order cannot be (its id is the primary key); handed out twice it can.
  const duplicated = client.sharedOrderIds + client.keyMismatches;
  const soldInRun = audit.sold - soldBefore;
  const expectedSold = client.orders - returned;
  // Unanswered requests may have been admitted without the client seeing it.
  const soldMatches = client.unanswered === 0 ? soldInRun === expectedSold : soldInRun >= expectedSold && soldInRun <= expectedSold + client.unanswered;

  const checks: VerdictCheck[] = [
    ...auditCheck(audit, 'after the sale'),
    { name: 'every order stored (drained)', ok: drainLagMs !== null, detail: drainLagMs === null ? 'orders still in flight at the drain timeout' : `${seconds(drainLagMs / 1000)} after the last order` },
    { name: 'each order id given to one buyer', ok: client.sharedOrderIds === 0, detail: `${client.sharedOrderIds} shared` },
    { name: 'same Idempotency-Key, same order', ok: client.keyMismatches === 0, detail: `${client.keyMismatches} retries answered with another order` },
    // Over the run: a buyer whose order came back (expired, cancelled) may rightly claim again, so
    // each buyer above the limit needs a unit returned; what buyers hold now is I2's.
    {
      name: `no buyer above the limit of ${perUserLimit}`,
      ok: client.buyersOverLimit <= returned,
      detail: `${client.buyersOverLimit} buyers were handed more orders than it${returned ? `, with ${returned} order(s) returned during the run` : ''}`,
    },
    {
      name: 'orders handed out <= units available',
      ok: client.orders <= baseline.available + returned,
      detail: `${client.orders} orders, ${baseline.available} available at the start${returned ? ` + ${returned} returned during the run` : ''}`,
    },
    {
      name: 'units sold = orders handed out',
      ok: soldMatches,
      detail: `database sold ${soldInRun} in this run, buyers were given ${client.orders}${returned ? ` (${returned} returned)` : ''}${client.unanswered ? `, ${client.unanswered} requests unanswered` : ''}`,
    },
  ];
  if (queue) {
    checks.push(
      { name: 'the draw re-checked from what was published', ok: queue.draw.ok, detail: queue.draw.problems.join('; ') },
      // `orders` here: the buyers whose standing named an order.
      { name: 'each admitted place shows its buyer the order', ok: client.orders === queue.placesAdmitted, detail: `${client.orders} buyers see an order, ${queue.placesAdmitted} places admitted` },
    );
  }
  if (payments) {
    const { report, audit: after } = payments;
    const paidInRun = (after.orders.paid ?? 0) - before.orders.paid;
    checks.push(...auditCheck(after, 'after payments and expiry'));
    checks.push({ name: 'paid orders = payments confirmed', ok: paidInRun === report.paid, detail: `${paidInRun} paid in the database, ${report.paid} confirmed to buyers` });
    if (report.waitedForExpiry) {
      checks.push({
        name: 'unpaid orders expired, units back',
        ok: report.expiredAfterS !== null && after.orders.pending_payment === 0 && (after.redisStock === null || after.redisStock === after.dbStock),
        detail: report.expiredAfterS === null ? 'orders still pending at the timeout' : `${after.orders.expired ?? 0} expired; stock back to ${after.dbStock} (DB) / ${after.redisStock ?? '-'} (Redis)`,
      });
    }
    if (report.late) {
      checks.push({ name: 'a payment after the expiry is kept as refund_due', ok: report.late.keptAsRefundDue, detail: `order ${report.late.orderId}` });
    }
  }
  return {
    ok: oversold === 0 && lost === 0 && duplicated === 0 && checks.every((c) => c.ok),
    oversold,
    lost,
    duplicated,
    unsold: audit.dbStock,
    checks,
  };
}
