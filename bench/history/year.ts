// A year of a busy shop as a pure function of its size: which vouchers ran when, how many orders
// each took, and every order's buyer, status and times. Nothing here touches a store; the loader
// (load.ts) streams these rows into the tables the migrations made.
//
// Shape: vouchers sell one after another through the year, each in a short window of its own
// (a flash sale), so order ids, which carry their creation time as the engine's Snowflake ids
// do, rise voucher by voucher; the last `live` vouchers are on sale now, in the last 20 hours,
// and pay within a day, so their unpaid orders are pending with a deadline still ahead. The
// first live voucher is the hot one (a tenth of all orders, 1,000,000 at full size); the
// others' order counts are log-normal. A voucher's buyers are distinct (one order each), so a
// buyer's units on a voucher are that order's, and one buyer (`longBuyer`) bought in a thousand
// sales. Statuses: finished sales 68 % paid, 27 % expired, 3.5 % cancelled, 1.5 % failed; live
// ones 70 % paid, 25 % pending, 3.5 % cancelled, 1.5 % failed.
import { EPOCH_MS, SEQUENCE_BITS, WORKER_BITS } from '../../src/ids/snowflake.js';
import type { StoredOrderStatus, VoucherKind } from '../../src/infra/db/types.js';

const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
const LIVE_SPAN_MS = 20 * 3_600_000;
/** Worker ids of the Snowflake ids made here: leases hand out the low ones first. */
const VOUCHER_WORKER = 1022n;
const ORDER_WORKER = 1023n;
const LONG_HISTORY_ORDERS = 1_000;
/** The buyer with a long history: above every generated buyer and every benchmark's. */
export const LONG_BUYER = 900_000_000_001;

export interface YearOptions {
  orders: number;
  vouchers: number;
  live: number;
  /** Distinct buyers (default: a tenth of the orders, at least the hot voucher's). */
  users?: number;
  /** The moment the year ends (ms). */
  now: number;
}

export interface VoucherPlan {
  index: number;
  id: bigint;
  kind: VoucherKind;
  live: boolean;
  createdMs: number;
  beginMs: number;
  endMs: number;
  perUserLimit: number;
  paymentTimeoutS: number;
  orders: number;
  /** Orders are created evenly within [firstOrderMs, lastOrderMs]. */
  firstOrderMs: number;
  lastOrderMs: number;
  /** Units never sold (0: sold out). */
  leftover: number;
  /** The long-history buyer's order is this voucher's first. */
  longBuyer: boolean;
}

export interface OrderRow {
  id: bigint;
  userId: number;
  quantity: number;
  status: StoredOrderStatus;
  createdMs: number;
  expiresMs: number | null;
  paidMs: number | null;
  updatedMs: number;
  failureReason: string | null;
  idempotencyKey: string | null;
}

export interface Year {
  vouchers: VoucherPlan[];
  users: number;
  longBuyer: number;
  /** Index of the voucher with the most orders (the first live one). */
  hot: number;
  now: number;
}

/** A uniform number in [0, 1) from three integers (murmur3's finaliser). */
export function unit(a: number, b: number, c = 0): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(c + 0x165667b1, 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** A step coprime with `users`: order j of a voucher goes to buyer (offset + j·step) mod users, all distinct. */
function stepFor(users: number): number {
  let step = Math.max(1, Math.floor(users * 0.618) + 1);
  while (gcd(step, users) !== 1) step += 1;
  return step;
}

const snowflake = (ms: number, worker: bigint, sequence: number) =>
  (BigInt(ms - EPOCH_MS) << BigInt(WORKER_BITS + SEQUENCE_BITS)) | (worker << BigInt(SEQUENCE_BITS)) | BigInt(sequence);

function orderCounts(o: YearOptions, hot: number): number[] {
  const counts = new Array<number>(o.vouchers).fill(0);
  if (o.orders === 0) return counts;
  const hotOrders = Math.min(o.orders, Math.floor(o.orders / 10));
  counts[hot] = hotOrders;
  const rest = o.orders - hotOrders;
  const others = o.vouchers - 1;
  if (others === 0) {
    counts[hot] = o.orders;
    return counts;
  }
  // Log-normal weights (σ = 1.2): most sales are small, a few are big.
  const weights = counts.map((_, k) => {
    if (k === hot) return 0;
    const u1 = Math.max(unit(k, 1), 1e-12);
    const u2 = unit(k, 2);
    return Math.exp(1.2 * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2));
  });
  const total = weights.reduce((a, b) => a + b, 0);
  let given = 0;
  for (let k = 0; k < o.vouchers; k++) {
    if (k === hot) continue;
    counts[k] = Math.floor((rest * weights[k]!) / total);
    given += counts[k]!;
  }
  // The rounding remainder, one order each to the first vouchers.
  for (let k = 0; given < rest; k = (k + 1) % o.vouchers) {
    if (k === hot) continue;
    counts[k]! += 1;
    given += 1;
  }
  return counts;
}

export function planYear(o: YearOptions): Year {
  if (o.live > o.vouchers) throw new Error('--live cannot exceed --vouchers');
  const finished = o.vouchers - o.live;
  const hot = o.live > 0 ? finished : o.vouchers - 1;
  const counts = orderCounts(o, hot);
  const users = Math.max(o.users ?? Math.ceil(o.orders / 10), counts[hot]!, 1_000);
  const longEvery = Math.max(1, Math.floor(o.vouchers / LONG_HISTORY_ORDERS));
  const yearStart = o.now - YEAR_MS;
  const finishedSlot = finished > 0 ? (YEAR_MS - 2 * DAY_MS) / finished : 0;
  const liveStart = o.now - LIVE_SPAN_MS;
  const liveSlot = o.live > 0 ? (LIVE_SPAN_MS - 60_000) / o.live : 0;
  const vouchers = counts.map((orders, k): VoucherPlan => {
    const live = k >= finished;
    const slotStart = live ? liveStart + (k - finished) * liveSlot : yearStart + k * finishedSlot;
    const slot = live ? liveSlot : finishedSlot;
    const beginMs = Math.floor(slotStart);
    const firstOrderMs = beginMs + 1_000;
    const lastOrderMs = Math.max(firstOrderMs, Math.floor(slotStart + slot * 0.9));
    const soldOut = !live && unit(k, 3) < 0.6;
    return {
      index: k,
      id: snowflake(beginMs - 3_600_000, VOUCHER_WORKER, 0),
      kind: k === hot ? 'seckill' : k % 20 === 7 ? 'limited' : k % 20 === 13 ? 'common' : 'seckill',
      live,
      createdMs: beginMs - 3_600_000,
      beginMs,
      endMs: live ? o.now + 7 * DAY_MS : Math.floor(slotStart + slot * 0.95),
      perUserLimit: k % 5 === 0 ? 2 : 1,
      paymentTimeoutS: live ? 86_400 : 900,
      orders,
      firstOrderMs,
      lastOrderMs,
      leftover: live ? 100_000 : soldOut ? 0 : Math.floor(unit(k, 4) * 50),
      longBuyer: k % longEvery === 0 && orders > 0,
    };
  });
  return { vouchers, users, longBuyer: LONG_BUYER, hot, now: o.now };
}

/** The status of order j of voucher v (a function of both alone, so a pass can skip the rest). */
export function statusOf(v: VoucherPlan, j: number): StoredOrderStatus {
  const u = unit(v.index, j, 5);
  if (u < 0.035) return 'cancelled';
  if (u < 0.05) return 'failed';
  if (v.live) return u < 0.75 ? 'paid' : 'pending_payment';
  return u < 0.73 ? 'paid' : 'expired';
}

export const quantityOf = (v: VoucherPlan, j: number): number => (v.perUserLimit > 1 && unit(v.index, j, 6) < 0.25 ? 2 : 1);

export const holds = (s: StoredOrderStatus): boolean => s === 'paid' || s === 'pending_payment';

/** Units held in active orders (paid or pending): initial stock − this = stock. */
export function activeUnits(v: VoucherPlan): number {
  let units = 0;
  for (let j = 0; j < v.orders; j++) if (holds(statusOf(v, j))) units += quantityOf(v, j);
  return units;
}

export const initialStock = (v: VoucherPlan, active: number): number => active + v.leftover;

/** Buyer of order j of voucher v. */
export function buyersOf(year: Year, v: VoucherPlan): (j: number) => number {
  const step = stepFor(year.users);
  const offset = Math.floor(unit(v.index, 7) * year.users);
  return (j) => (j === 0 && v.longBuyer ? year.longBuyer : 1 + ((offset + j * step) % year.users));
}

/** Order ids in creation order: the millisecond of creation, then a sequence within it. */
export class OrderIds {
  private lastMs = 0;
  private sequence = 0;
  /** The id for an order created at `ms` (moved to a later millisecond when `ms` is taken up). */
  next(ms: number): { id: bigint; ms: number } {
    if (ms > this.lastMs) {
      this.lastMs = ms;
      this.sequence = 0;
    } else if (++this.sequence >= 1 << SEQUENCE_BITS) {
      this.lastMs += 1;
      this.sequence = 0;
    }
    return { id: snowflake(this.lastMs, ORDER_WORKER, this.sequence), ms: this.lastMs };
  }
}

/** Every order of voucher v, in creation order; `ids` must be shared by the vouchers in index order. */
export function* ordersOf(year: Year, v: VoucherPlan, ids: OrderIds): Generator<OrderRow> {
  const span = v.lastOrderMs - v.firstOrderMs;
  const timeoutMs = v.paymentTimeoutS * 1000;
  const synchronous = v.kind !== 'seckill';
  const buyer = buyersOf(year, v);
  for (let j = 0; j < v.orders; j++) {
    const { id, ms } = ids.next(v.firstOrderMs + Math.floor((span * j) / Math.max(1, v.orders)));
    const status = statusOf(v, j);
    // Paid or cancelled some time after the claim, never after now.
    const later = (share: number) => Math.min(year.now - 1_000, ms + Math.floor(unit(v.index, j, 8) * share * timeoutMs));
    const expiresMs = status === 'failed' ? null : ms + timeoutMs;
    const paidMs = status === 'paid' ? later(0.5) : null;
    const updatedMs = status === 'paid' ? paidMs! : status === 'expired' ? ms + timeoutMs + 300 : status === 'cancelled' ? later(0.3) : ms + 20;
    yield {
      id,
      userId: buyer(j),
      quantity: quantityOf(v, j),
      status,
      createdMs: ms,
      expiresMs,
      paidMs,
      updatedMs,
      failureReason: status === 'failed' ? (unit(v.index, j, 9) < 0.7 ? 'DB_SOLD_OUT' : 'DB_LIMIT_EXCEEDED') : null,
      idempotencyKey: synchronous && unit(v.index, j, 10) < 0.5 ? `k${id.toString(36)}` : null,
    };
  }
}
