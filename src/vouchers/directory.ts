// In-process cache of voucher definitions. A voucher never changes after creation, so a hit
// needs no invalidation; misses are remembered briefly so unknown ids cannot flood the database.
import type { VoucherRepository } from './repository.js';
import type { Voucher } from './voucher.js';

const MAX_ENTRIES = 10_000;
const NEGATIVE_TTL_MS = 1_000;

export interface VoucherDirectory {
  get(id: bigint): Promise<Voucher | null>;
  remember(v: Voucher): void;
}

export function createVoucherDirectory(vouchers: VoucherRepository): VoucherDirectory {
  const known = new Map<bigint, Voucher>();
  const missing = new Map<bigint, number>();
  const loading = new Map<bigint, Promise<Voucher | null>>();

  function remember(v: Voucher) {
    if (known.size >= MAX_ENTRIES) known.delete(known.keys().next().value as bigint);
    known.set(v.id, v);
    missing.delete(v.id);
  }

  async function load(id: bigint): Promise<Voucher | null> {
    try {
      const v = await vouchers.findById(id);
      if (v) remember(v);
      else {
        if (missing.size >= MAX_ENTRIES) missing.clear();
        missing.set(id, Date.now() + NEGATIVE_TTL_MS);
      }
      return v;
    } finally {
      loading.delete(id);
    }
  }

  return {
    remember,
    get(id) {
      const hit = known.get(id);
      if (hit) return Promise.resolve(hit);
      const missUntil = missing.get(id);
      if (missUntil !== undefined && missUntil > Date.now()) return Promise.resolve(null);
      // Concurrent misses for the same id share one query.
      let pending = loading.get(id);
      if (!pending) {
        pending = load(id);
        loading.set(id, pending);
      }
      return pending;
    },
  };
}
