// Tokens verified before, by their exact text: a buyer sends one token many times in a sale, and
// an RS256/ES256 verification costs more than the claim it guards. A hit is one Map lookup and a
// clock comparison, synchronous. Bounded: when full, the entry inserted longest ago goes unless it
// was used since (then it moves to the back once: "second chance", an LRU without a reordering
// on every hit). An entry lasts no longer than its token's `exp`.
import type { Principal } from './tokens.js';

/** Entries kept at most: ~1 KB each with a typical token, so ~50 MB when full. */
export const VERIFIED_TOKENS_CAPACITY = 50_000;

interface Entry {
  principal: Principal;
  /** Epoch ms after which the token is expired (its `exp`), Infinity without one. */
  until: number;
  used: boolean;
}

export class VerifiedTokens {
  private readonly capacity: number;
  private readonly entries = new Map<string, Entry>();

  constructor(capacity = VERIFIED_TOKENS_CAPACITY) {
    this.capacity = capacity;
    if (!(capacity >= 1)) throw new Error('the capacity must be at least 1');
  }

  /** The principal of `token` verified before and not expired at `now`. */
  get(token: string, now: number): Principal | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (now > entry.until) {
      this.entries.delete(token);
      return undefined;
    }
    entry.used = true;
    return entry.principal;
  }

  add(token: string, principal: Principal, now: number): void {
    if (!this.entries.has(token) && this.entries.size >= this.capacity) this.evictOne(now);
    this.entries.set(token, { principal: Object.freeze(principal), until: principal.expiresAt ?? Infinity, used: false });
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  private evictOne(now: number): void {
    // Ends: every entry moved to the back has lost its mark, so a second pass evicts.
    for (const [token, entry] of this.entries) {
      this.entries.delete(token);
      if (!entry.used || now > entry.until) return;
      entry.used = false;
      this.entries.set(token, entry);
    }
  }
}
