// In-process cache of voucher definitions. A voucher never changes after creation, so a hit
// needs no invalidation. A miss learns a gap, not an id: no voucher lay between the two next to
// the id asked for when the query began, so every id between them is answered "not found" without
// a query for GAP_TTL_MS. A flood of distinct unknown ids thus costs a query per gap (one more
// than there are vouchers), not one per id; and one load runs at a time, so a burst of misses
// waits for the answer that may cover it instead of all asking. A voucher created by another
// process inside a remembered gap stays unknown here for GAP_TTL_MS at most; one created through
// this process (remember) is known at once.
import type { VoucherRepository } from './repository.js';
import type { Voucher } from './voucher.js';

const MAX_ENTRIES = 10_000;
const MAX_GAPS = 10_000;
export const GAP_TTL_MS = 1_000;

export interface VoucherDirectory {
  /** For ids from requests: a remembered gap may answer null for GAP_TTL_MS after the voucher's creation elsewhere. */
  get(id: bigint): Promise<Voucher | null>;
  /** For ids read from stored rows (orders, outboxes), which name a voucher that exists: no gap answers them. */
  getStored(id: bigint): Promise<Voucher | null>;
  remember(v: Voucher): void;
}

/** No voucher id lies strictly between `after` and `before` (null: unbounded), until `until`. */
interface Gap {
  after: bigint | null;
  before: bigint | null;
  until: number;
}

const now = () => performance.now();
const lowerEnd = (g: Gap) => g.after ?? -1n; // ids are never negative
/** `id` is below the gap's upper end. */
const belowEnd = (id: bigint, g: Gap) => g.before === null || id < g.before;

/** Remembered gaps, sorted and disjoint, so that the one holding an id is found by bisection. */
function createGaps() {
  const gaps: Gap[] = [];

  /** Index of the first gap whose lower end is at or above `id`. */
  function firstFrom(id: bigint): number {
    let lo = 0;
    let hi = gaps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (lowerEnd(gaps[mid]!) < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of the gap holding `id` (fresh or not), or -1. */
  function indexOf(id: bigint): number {
    const i = firstFrom(id) - 1;
    return i >= 0 && belowEnd(id, gaps[i]!) ? i : -1;
  }

  return {
    holds(id: bigint): boolean {
      const i = indexOf(id);
      return i >= 0 && gaps[i]!.until > now();
    },
    /** Replaces the gaps it overlaps: they were learned before a voucher appeared inside them. */
    learn(gap: Gap) {
      if (gaps.length >= MAX_GAPS) {
        const fresh = gaps.filter((g) => g.until > now());
        gaps.length = 0;
        if (fresh.length < MAX_GAPS) gaps.push(...fresh);
      }
      // The overlapped gaps are a run: at most one starting below this one, then those starting inside it.
      let from = firstFrom(lowerEnd(gap));
      if (from > 0 && belowEnd(lowerEnd(gap), gaps[from - 1]!)) from--;
      let to = from;
      while (to < gaps.length && belowEnd(lowerEnd(gaps[to]!), gap)) to++;
      gaps.splice(from, to - from, gap);
    },
    forget(id: bigint) {
      const i = indexOf(id);
      if (i >= 0) gaps.splice(i, 1);
    },
  };
}

export function createVoucherDirectory(vouchers: VoucherRepository): VoucherDirectory {
  const known = new Map<bigint, Voucher>();
  const gaps = createGaps();

  function remember(v: Voucher) {
    if (known.size >= MAX_ENTRIES) known.delete(known.keys().next().value as bigint);
    known.set(v.id, v);
    gaps.forget(v.id);
  }

  /** What the cache knows of `id`: the voucher, null (none), or undefined (ask the database). */
  const cached = (id: bigint): Voucher | null | undefined => known.get(id) ?? (gaps.holds(id) ? null : undefined);

  async function load(id: bigint): Promise<Voucher | null> {
    // Taken before the query: a voucher committed after it began is missed for GAP_TTL_MS at most.
    const until = now() + GAP_TTL_MS;
    const { below, atOrAbove } = await vouchers.neighbours(id);
    if (atOrAbove !== id) {
      gaps.learn({ after: below, before: atOrAbove, until });
      return null;
    }
    return fetch(id);
  }

  async function fetch(id: bigint): Promise<Voucher | null> {
    const v = await vouchers.findById(id);
    if (v) remember(v);
    return v;
  }

  // One load at a time: the misses that arrive meanwhile wait for its answer, which may cover them.
  let current: Promise<Voucher | null> | null = null;

  async function get(id: bigint): Promise<Voucher | null> {
    for (;;) {
      const answer = cached(id);
      if (answer !== undefined) return answer;
      if (current === null) {
        const started = load(id);
        current = started;
        // Registered before any waiter's, so the waiters find the slot free when they wake.
        return started.finally(() => (current = null));
      }
      // A failed load ends this wait with its error: the database is failing for this miss too.
      await current;
    }
  }

  return { remember, get, getStored: async (id) => known.get(id) ?? fetch(id) };
}
