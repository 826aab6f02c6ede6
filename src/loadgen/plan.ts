// Which buyer sends request number i, with which Idempotency-Key. Every buyer asks once (in a
// shuffled order); then a share of them, the repeaters, keep asking in further waves, as buyers do
// in a real sale: some retry with the key of their first request (a double-click or a client
// retry: the server must answer with the same order and take no second unit), the others make a
// new attempt with a new key. Deterministic for a given seed, computed on demand (no per-request
// memory).

export interface PlanOptions {
  buyers: number;
  /** Share of buyers (0..1) that keep repeating after their first request. */
  repeatShare: number;
  /** Share of repeats (0..1) that reuse the key of the buyer's first request. */
  sameKeyShare: number;
  seed: number;
  /** Makes this run's keys unique (a voucher may have seen other runs); [A-Za-z0-9_-]. */
  keyTag: string;
}

export interface PlannedRequest {
  buyer: number;
  idempotencyKey: string;
}

/** mulberry32: a small seeded PRNG, good enough for shuffling. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

function shuffled(count: number, next: () => number): Uint32Array {
  const order = Uint32Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** A stateless coin per (buyer, wave): the same plan whatever order requests are taken in. */
function coin(seed: number, buyer: number, wave: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(buyer + 1, 0xc2b2ae35) ^ Math.imul(wave + 1, 0x27d4eb2f);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

export class RequestPlan {
  private readonly o: PlanOptions;
  private readonly firstWave: Uint32Array;
  private readonly repeaters: Uint32Array;

  constructor(o: PlanOptions) {
    this.o = o;
    const next = random(o.seed);
    this.firstWave = shuffled(o.buyers, next);
    this.repeaters = shuffled(o.buyers, next).subarray(0, Math.round(o.buyers * o.repeatShare));
  }

  /** Requests in the plan: Infinity once anyone repeats (waves go on until the run stops). */
  get length(): number {
    return this.repeaters.length ? Infinity : this.firstWave.length;
  }

  /** Requests sent if every buyer asks once and every repeater repeats once. */
  get onePass(): number {
    return this.firstWave.length + this.repeaters.length;
  }

  firstKey(buyer: number): string {
    return `${this.o.keyTag}-${buyer}`;
  }

  at(i: number): PlannedRequest {
    if (i < this.firstWave.length) {
      const buyer = this.firstWave[i]!;
      return { buyer, idempotencyKey: this.firstKey(buyer) };
    }
    const j = i - this.firstWave.length;
    const buyer = this.repeaters[j % this.repeaters.length]!;
    const wave = 1 + Math.floor(j / this.repeaters.length);
    const same = coin(this.o.seed, buyer, wave) < this.o.sameKeyShare;
    return { buyer, idempotencyKey: same ? this.firstKey(buyer) : `${this.o.keyTag}-${buyer}-${wave}` };
  }
}
