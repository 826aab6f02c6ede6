// The checker: a history of claims and reads (history.ts) joined with both stores read after the
// heal and the drain (stores.ts). Pure: the same history and snapshot always give the same report.
// It imports nothing of the engine: what it knows of the engine is the API contract and the
// documented tables and keys.
//
// Words. An order is ACKNOWLEDGED when a claim's outcome is `ok` (201/202 with an order id); its
// first such claim is its claim. A buyer is (voucher, user). A claim's GROUP is its buyer plus its
// Idempotency-Key; a claim without a key is a group of its own. ACTIVE orders are `pending_payment`
// and `paid`; RELEASED ones `cancelled` and `expired`; `failed` ones gave their units back too
// (compensated). A REFUSAL is a `fail` claim other than a waitlisted SOLD_OUT (which a promotion
// may later turn into an order). Each count below is kept per voucher and summed for the total.
//
// - acked-lost: acknowledged order ids with no stored order.
// - acked-failed: acknowledged order ids stored with status `failed`.
// - ids-twice: acknowledged order ids acknowledged to more than one buyer, or stored for another
//   buyer than their claim's.
// - replay-mismatch: per group with a key, distinct acknowledged order ids beyond the first.
// - duplicates: stored rows beyond the first with the same order id, and beyond the first with
//   the same (voucher, user, Idempotency-Key) stored on the order.
// - Every other stored order of a buyer (not acknowledged to that buyer) must be accounted for,
//   taken in this order:
//   1. an order whose id a refusal of the buyer carries: refused-but-stored;
//   2. an order that stores an Idempotency-Key belongs to that group: accounted
//      when the group has an `unknown` or `ok` claim or a waitlisted SOLD_OUT; refused-but-stored
//      when it has refusals only; unclaimed when the history has no such group;
//   3. the others (stored without a key) are matched by quantity: each group without an
//      acknowledgement and with an `unknown` claim or a waitlisted SOLD_OUT accounts for one order
//      of its quantity. What is left is, while any is: unknown-twice, up to (its `unknown` claims −
//      1, or all of them when the group was acknowledged) per keyed group of that quantity (a
//      retry that took effect again); then refused-but-stored, up to one per refusal of that
//      quantity; then unclaimed (an order no claim of the history explains). When one order could
//      be either, it is counted as unknown-twice.
// - oversold: units of active orders beyond the voucher's initial stock (released units are back
//   in stock and may be sold again, so only active orders count).
// - stock-drift: |DB stock − (initial stock − units of active orders)|.
// - quota-drift: buyers whose `user_quantities` row (0 when missing) differs from their units in
//   active orders.
// - limit-breach: buyers holding more units in active orders than the voucher's per-user limit.
// - limit-breach-acked: buyers whose acknowledged orders (each id once, at its claim's quantity),
//   leaving out those stored released, add up to more than the per-user limit. A failed or lost one
//   counts: the buyer was told it was theirs (so it shows beside acked-failed or acked-lost).
// - false-sold-out: SOLD_OUT answers (waitlisted or not) that units still claimable contradict: an
//   acknowledged order of the voucher whose quantity is at least the SOLD_OUT claim's, whose group
//   sent its first claim after the SOLD_OUT was answered (so a replay of an earlier admission is
//   no evidence), and with no unit coming back in between: no released or failed order whose
//   updatedAt + releaseLagMs is later than the SOLD_OUT claim's sending minus the grace and whose
//   updatedAt is earlier than the acknowledgement's arrival. Stock only falls between units coming
//   back, so the units were there through the whole grace before the answer: a sold-out flag
//   cached for at most the grace cannot excuse it. releaseLagMs is how long a release committed
//   in SQL may take to reach Redis (the release relay; longer while Redis is cut off). The
//   history's times are the driver's clock and updatedAt the database's, so a clock fault must
//   move the engine's clock only. Units Redis gets back without a release (a repair by
//   reconciliation) make the SOLD_OUTs before them false too: the database had those units while
//   buyers heard SOLD_OUT.
// - processing-forever: acknowledged orders whose last read (the campaign reads each one again
//   after the drain) still says `processing`.
// - redis-stock-drift: |Redis stock (Σ segments; 0 when missing) − DB stock|; redis-buyer-drift:
//   buyers whose Redis count (0 when missing) differs from their units in active orders;
//   inflight-left: in-flight records of the voucher left after the drain. All three stay 0 when
//   Redis was not read.
import type { ClaimOp, History, ReadOp } from './history.js';
import type { RedisVoucher, StoredOrder, Stores } from './stores.js';

export const ANOMALIES = [
  'acked-lost',
  'acked-failed',
  'unknown-twice',
  'refused-but-stored',
  'unclaimed',
  'duplicates',
  'ids-twice',
  'replay-mismatch',
  'oversold',
  'stock-drift',
  'quota-drift',
  'limit-breach',
  'limit-breach-acked',
  'false-sold-out',
  'processing-forever',
  'redis-stock-drift',
  'redis-buyer-drift',
  'inflight-left',
] as const;
export type Anomaly = (typeof ANOMALIES)[number];
export type Counts = Record<Anomaly, number>;

/** How much happened (not anomalies): claims by outcome, SOLD_OUT answers, stored orders, units in active orders. */
export interface Tally {
  claims: number;
  acked: number;
  unknown: number;
  failed: number;
  soldOut: number;
  stored: number;
  sold: number;
}

export interface Findings {
  counts: Counts;
  tally: Tally;
  /** A few ids per anomaly found ("order 123", "user 7"), to start looking from. */
  examples: Partial<Record<Anomaly, string[]>>;
}

export interface VoucherReport extends Findings {
  voucherId: string;
}

export interface Report {
  vouchers: VoucherReport[];
  total: Findings;
  redisChecked: boolean;
}

export interface CheckOptions {
  /** How long a SOLD_OUT may lag units coming back: the engine's SOLD_OUT_CACHE_MS. */
  soldOutGraceMs: number;
  /** How long units released in SQL may take to reach Redis (default 0). */
  releaseLagMs?: number;
}

/** The anomalies a mode promises never to show. */
export type ModePromise = readonly Anomaly[];

export interface Verdict {
  ok: boolean;
  broken: { anomaly: Anomaly; count: number }[];
}

const EXAMPLES_PER_ANOMALY = 5;
const ACTIVE = new Set(['pending_payment', 'paid']);
const RELEASED = new Set(['cancelled', 'expired']);
/** Statuses whose units went back to stock: released, or failed (compensated). */
const UNITS_BACK = new Set([...RELEASED, 'failed']);

const zeroCounts = (): Counts => Object.fromEntries(ANOMALIES.map((a) => [a, 0])) as Counts;
const zeroTally = (): Tally => ({ claims: 0, acked: 0, unknown: 0, failed: 0, soldOut: 0, stored: 0, sold: 0 });
const noFindings = (): Findings => ({ counts: zeroCounts(), tally: zeroTally(), examples: {} });

const buyerOf = (voucherId: string, userId: string) => `${voucherId}|${userId}`;
const groupOf = (c: ClaimOp) => (c.idempotencyKey === null ? `claim|${c.id}` : `${buyerOf(c.voucherId, c.userId)}|key|${c.idempotencyKey}`);
const onWaitlist = (c: ClaimOp) => c.code === 'SOLD_OUT' && c.waitlisted === true;
const isRefusal = (c: ClaimOp) => c.outcome === 'fail' && !onWaitlist(c);
const mayStoreLater = (c: ClaimOp) => c.outcome === 'unknown' || onWaitlist(c);

function groupBy<T, K>(items: Iterable<T>, key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

const sum = (xs: Iterable<number>) => [...xs].reduce((n, x) => n + x, 0);
const byId = (a: string, b: string) => (a.length - b.length) || (a < b ? -1 : a > b ? 1 : 0);

/** The first index i < n, in a list sorted by `at`, with at(i) > x (n when none). */
function firstAbove(n: number, x: number, at: (i: number) => number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (at(mid) > x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

interface ClaimGroup {
  claims: ClaimOp[];
  /** Distinct acknowledged order ids, in order. */
  ackedIds: string[];
  /** `at` of its first claim. */
  firstAt: number;
}

type Note = (voucherId: string, anomaly: Anomaly, n: number, example?: string) => void;

/** What every judgement reads: the history and the snapshot, indexed once. */
interface Facts {
  stores: Stores;
  claims: readonly ClaimOp[];
  reads: readonly ReadOp[];
  /** One row per order id (the first stored). */
  orders: readonly StoredOrder[];
  orderById: ReadonlyMap<string, StoredOrder>;
  groups: ReadonlyMap<string, ClaimGroup>;
  /** Acknowledged order id → its first acknowledging claim. */
  claimOfOrder: ReadonlyMap<string, ClaimOp>;
  /** voucherId → userId → units in active orders. */
  held: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export function check(history: History, stores: Stores, options: CheckOptions): Report {
  const byVoucher = new Map<string, Findings>();
  const findingsOf = (voucherId: string): Findings => {
    let c = byVoucher.get(voucherId);
    if (!c) byVoucher.set(voucherId, (c = noFindings()));
    return c;
  };
  const note: Note = (voucherId, anomaly, n, example) => {
    if (n <= 0) return;
    const c = findingsOf(voucherId);
    c.counts[anomaly] += n;
    const list = (c.examples[anomaly] ??= []);
    if (example !== undefined && list.length < EXAMPLES_PER_ANOMALY) list.push(example);
  };

  const facts = indexFacts(history, stores, note);
  for (const v of stores.vouchers) findingsOf(v.id);
  for (const c of facts.claims) {
    const t = findingsOf(c.voucherId).tally;
    t.claims += 1;
    if (c.outcome === 'ok') t.acked += 1;
    else if (c.outcome === 'unknown') t.unknown += 1;
    else t.failed += 1;
    if (c.code === 'SOLD_OUT') t.soldOut += 1;
  }
  for (const o of facts.orders) findingsOf(o.voucherId).tally.stored += 1;
  for (const [voucherId, users] of facts.held) findingsOf(voucherId).tally.sold = sum(users.values());

  judgeAcknowledged(facts, note);
  accountForOrders(facts, note);
  judgeUnits(facts, note);
  findFalseSoldOuts(facts, options.soldOutGraceMs + (options.releaseLagMs ?? 0), note);
  findProcessingForever(facts, note);
  if (stores.redis) judgeRedis(facts, stores.redis, note);

  const vouchers = [...byVoucher.entries()].sort(([a], [b]) => byId(a, b)).map(([voucherId, c]) => ({ voucherId, ...c }));
  return { vouchers, total: sumFindings(vouchers), redisChecked: stores.redis !== null };
}

/** Indexes history and snapshot; counts the duplicates (rows beyond the first per id and per stored key). */
function indexFacts(history: History, stores: Stores, note: Note): Facts {
  const claims = history.filter((op): op is ClaimOp => op.op === 'claim');
  const reads = history.filter((op): op is ReadOp => op.op === 'read');

  const orders: StoredOrder[] = [];
  for (const [id, rows] of groupBy(stores.orders, (o) => o.id)) {
    orders.push(rows[0]!);
    note(rows[0]!.voucherId, 'duplicates', rows.length - 1, `order ${id}`);
  }
  const keyed = orders.filter((o) => o.idempotencyKey !== null);
  for (const rows of groupBy(keyed, (o) => `${buyerOf(o.voucherId, o.userId)}|${o.idempotencyKey}`).values()) {
    note(rows[0]!.voucherId, 'duplicates', rows.length - 1, `order ${rows.at(-1)!.id}`);
  }

  const groups = new Map<string, ClaimGroup>();
  const claimOfOrder = new Map<string, ClaimOp>();
  for (const c of claims) {
    const g = groups.get(groupOf(c)) ?? { claims: [], ackedIds: [], firstAt: c.at };
    groups.set(groupOf(c), g);
    g.claims.push(c);
    g.firstAt = Math.min(g.firstAt, c.at);
    if (c.outcome !== 'ok') continue;
    if (!g.ackedIds.includes(c.orderId!)) g.ackedIds.push(c.orderId!);
    if (!claimOfOrder.has(c.orderId!)) claimOfOrder.set(c.orderId!, c);
  }

  const held = new Map<string, Map<string, number>>();
  for (const o of orders) {
    if (!ACTIVE.has(o.status)) continue;
    const users = held.get(o.voucherId) ?? new Map<string, number>();
    held.set(o.voucherId, users);
    users.set(o.userId, (users.get(o.userId) ?? 0) + o.quantity);
  }
  return { stores, claims, reads, orders, orderById: new Map(orders.map((o) => [o.id, o])), groups, claimOfOrder, held };
}

/** acked-lost, acked-failed, ids-twice (each acknowledged id once) and replay-mismatch. */
function judgeAcknowledged({ claims, orderById, groups, claimOfOrder }: Facts, note: Note): void {
  for (const g of groups.values()) {
    const c = g.claims[0]!;
    if (c.idempotencyKey !== null) note(c.voucherId, 'replay-mismatch', g.ackedIds.length - 1, `user ${c.userId}`);
  }
  const buyersOfOrder = new Map<string, Set<string>>();
  for (const c of claims) {
    if (c.outcome !== 'ok') continue;
    const buyers = buyersOfOrder.get(c.orderId!) ?? new Set<string>();
    buyersOfOrder.set(c.orderId!, buyers.add(buyerOf(c.voucherId, c.userId)));
  }
  for (const [orderId, c] of claimOfOrder) {
    const stored = orderById.get(orderId);
    if (buyersOfOrder.get(orderId)!.size > 1 || (stored && buyerOf(stored.voucherId, stored.userId) !== buyerOf(c.voucherId, c.userId))) {
      note(c.voucherId, 'ids-twice', 1, `order ${orderId}`);
    } else if (!stored) note(c.voucherId, 'acked-lost', 1, `order ${orderId}`);
    else if (stored.status === 'failed') note(c.voucherId, 'acked-failed', 1, `order ${orderId}`);
  }
}

/** The stored orders not acknowledged to their buyer, accounted for as the header says (steps 1–3). */
function accountForOrders({ claims, orders, groups }: Facts, note: Note): void {
  const claimsOfBuyer = groupBy(claims, (c) => buyerOf(c.voucherId, c.userId));
  for (const [buyer, held] of groupBy(orders, (o) => buyerOf(o.voucherId, o.userId))) {
    const mine = claimsOfBuyer.get(buyer) ?? [];
    const ackedToBuyer = new Set(mine.filter((c) => c.outcome === 'ok').map((c) => c.orderId!));
    const carriedByRefusal = new Set(mine.filter((c) => isRefusal(c) && c.orderId !== null).map((c) => c.orderId!));
    const groupsOfBuyer = new Set(mine.map((c) => groups.get(groupOf(c))!));
    const keyedGroups = new Map([...groupsOfBuyer].filter((g) => g.claims[0]!.idempotencyKey !== null).map((g) => [g.claims[0]!.idempotencyKey!, g]));
    const keyedUsed = new Set<ClaimGroup>();
    const left: StoredOrder[] = [];

    for (const o of held) {
      if (ackedToBuyer.has(o.id)) continue;
      if (carriedByRefusal.has(o.id)) {
        note(o.voucherId, 'refused-but-stored', 1, `order ${o.id}`);
      } else if (o.idempotencyKey !== null) {
        const g = keyedGroups.get(o.idempotencyKey);
        if (!g) {
          note(o.voucherId, 'unclaimed', 1, `order ${o.id}`);
          continue;
        }
        keyedUsed.add(g);
        if (!g.claims.some((c) => c.outcome === 'ok' || mayStoreLater(c))) note(o.voucherId, 'refused-but-stored', 1, `order ${o.id}`);
      } else {
        left.push(o);
      }
    }

    for (const [quantity, ofOrders] of groupBy(left, (o) => o.quantity)) {
      const ofQuantity = [...groupsOfBuyer].filter((g) => !keyedUsed.has(g) && g.claims[0]!.quantity === quantity);
      const explained = ofQuantity.filter((g) => g.ackedIds.length === 0 && g.claims.some(mayStoreLater)).length;
      const twice = ofQuantity
        .filter((g) => g.claims[0]!.idempotencyKey !== null)
        .reduce((n, g) => {
          const unknowns = g.claims.filter((c) => c.outcome === 'unknown').length;
          return n + Math.max(0, g.ackedIds.length > 0 ? unknowns : unknowns - 1);
        }, 0);
      const refusals = mine.filter((c) => isRefusal(c) && c.orderId === null && c.quantity === quantity).length;
      let rest = ofOrders.slice(explained);
      for (const [anomaly, capacity] of [
        ['unknown-twice', twice],
        ['refused-but-stored', refusals],
        ['unclaimed', Infinity],
      ] as const) {
        for (const o of rest.slice(0, capacity)) note(o.voucherId, anomaly, 1, `order ${o.id}`);
        rest = rest.slice(capacity);
      }
    }
  }
}

/** oversold, stock-drift, quota-drift, limit-breach and limit-breach-acked. */
function judgeUnits({ stores, orderById, claimOfOrder, held }: Facts, note: Note): void {
  const quotaRows = groupBy(stores.userQuantities, (q) => q.voucherId);
  const ackedUnits = new Map<string, number>();
  for (const [orderId, c] of claimOfOrder) {
    const stored = orderById.get(orderId);
    if (stored && RELEASED.has(stored.status)) continue;
    const key = buyerOf(c.voucherId, c.userId);
    ackedUnits.set(key, (ackedUnits.get(key) ?? 0) + c.quantity);
  }
  for (const v of stores.vouchers) {
    const users = held.get(v.id) ?? new Map<string, number>();
    const sold = sum(users.values());
    note(v.id, 'oversold', sold - v.initialStock, `voucher ${v.id}`);
    note(v.id, 'stock-drift', Math.abs(v.stock - (v.initialStock - sold)), `voucher ${v.id}`);
    for (const [userId, units] of users) if (units > v.perUserLimit) note(v.id, 'limit-breach', 1, `user ${userId}`);
    const rows = new Map((quotaRows.get(v.id) ?? []).map((q) => [q.userId, q.quantity]));
    for (const userId of new Set([...users.keys(), ...rows.keys()])) {
      if ((rows.get(userId) ?? 0) !== (users.get(userId) ?? 0)) note(v.id, 'quota-drift', 1, `user ${userId}`);
    }
  }
  const vouchersById = new Map(stores.vouchers.map((v) => [v.id, v]));
  for (const [key, units] of ackedUnits) {
    const [voucherId, userId] = key.split('|') as [string, string];
    const limit = vouchersById.get(voucherId)?.perUserLimit;
    if (limit !== undefined && units > limit) note(voucherId, 'limit-breach-acked', 1, `user ${userId}`);
  }
}

/** SOLD_OUT answers contradicted by a later acknowledgement with no units back in between (header). */
/** `lookBackMs`: the grace plus the release lag, before a SOLD_OUT, in which units coming back excuse it. */
function findFalseSoldOuts({ claims, orders, groups, claimOfOrder }: Facts, lookBackMs: number, note: Note): void {
  const releasesOf = groupBy(
    orders.filter((o) => UNITS_BACK.has(o.status)),
    (o) => o.voucherId,
  );
  const releaseTimes = new Map([...releasesOf].map(([v, list]) => [v, list.map((o) => o.updatedAt).sort((a, b) => a - b)]));
  // Each acknowledged order once: units were there from its group's first claim until its answer.
  const evidenceOf = new Map(
    [...groupBy(claimOfOrder.values(), (c) => c.voucherId)].map(([v, acks]) => [
      v,
      acks.map((c) => ({ from: groups.get(groupOf(c))!.firstAt, doneAt: c.doneAt, quantity: c.quantity })).sort((a, b) => a.from - b.from),
    ]),
  );

  for (const so of claims) {
    if (so.code !== 'SOLD_OUT') continue;
    const evidence = evidenceOf.get(so.voucherId) ?? [];
    const releases = releaseTimes.get(so.voucherId) ?? [];
    const nextRelease = releases[firstAbove(releases.length, so.at - lookBackMs, (k) => releases[k]!)] ?? Infinity;
    for (let i = firstAbove(evidence.length, so.doneAt, (k) => evidence[k]!.from); i < evidence.length && evidence[i]!.from < nextRelease; i++) {
      const e = evidence[i]!;
      if (e.doneAt < nextRelease && e.quantity >= so.quantity) {
        note(so.voucherId, 'false-sold-out', 1, `claim ${so.id}`);
        break;
      }
    }
  }
}

/** Acknowledged orders whose last read says `processing`. */
function findProcessingForever({ reads, claimOfOrder }: Facts, note: Note): void {
  const lastRead = new Map<string, ReadOp>();
  for (const r of reads) {
    const seen = lastRead.get(r.orderId);
    if (!seen || r.at >= seen.at) lastRead.set(r.orderId, r);
  }
  for (const [orderId, c] of claimOfOrder) {
    if (lastRead.get(orderId)?.orderStatus === 'processing') note(c.voucherId, 'processing-forever', 1, `order ${orderId}`);
  }
}

/** redis-stock-drift, redis-buyer-drift and inflight-left, against the database. */
function judgeRedis({ stores, held }: Facts, redis: readonly RedisVoucher[], note: Note): void {
  const redisOf = new Map(redis.map((r) => [r.voucherId, r]));
  for (const v of stores.vouchers) {
    const r = redisOf.get(v.id);
    const buyers = r?.buyers ?? {};
    const users = held.get(v.id) ?? new Map<string, number>();
    note(v.id, 'redis-stock-drift', Math.abs((r?.stock ?? 0) - v.stock), `voucher ${v.id}`);
    note(v.id, 'inflight-left', r?.inflight ?? 0, `voucher ${v.id}`);
    for (const userId of new Set([...Object.keys(buyers), ...users.keys()])) {
      if ((buyers[userId] ?? 0) !== (users.get(userId) ?? 0)) note(v.id, 'redis-buyer-drift', 1, `user ${userId}`);
    }
  }
}

function sumFindings(all: readonly Findings[]): Findings {
  const total = noFindings();
  for (const c of all) {
    for (const a of ANOMALIES) total.counts[a] += c.counts[a];
    for (const k of Object.keys(total.tally) as (keyof Tally)[]) total.tally[k] += c.tally[k];
    for (const [a, list] of Object.entries(c.examples) as [Anomaly, string[]][]) {
      total.examples[a] = [...(total.examples[a] ?? []), ...list].slice(0, EXAMPLES_PER_ANOMALY);
    }
  }
  return total;
}

/** One line for a cell of the campaign: what happened, then every non-zero anomaly (or `clean`). */
export function formatLine(cellName: string, report: Report): string {
  const { tally, counts } = report.total;
  const found = ANOMALIES.filter((a) => counts[a] > 0).map((a) => `${a} ${counts[a]}`);
  return (
    `${cellName}: ${tally.claims} claims (${tally.acked} acked, ${tally.unknown} unknown, ${tally.failed} failed, ${tally.soldOut} sold out), ` +
    `${tally.stored} stored, ${tally.sold} units sold${report.redisChecked ? '' : ', Redis not read'} — ${found.length ? found.join(', ') : 'clean'}`
  );
}

/** Whether the report keeps the promise: every anomaly it names is zero in the total. */
export function verdict(report: Report, promise: ModePromise): Verdict {
  const broken = promise.filter((a) => report.total.counts[a] > 0).map((anomaly) => ({ anomaly, count: report.total.counts[anomaly] }));
  return { ok: broken.length === 0, broken };
}
