// Every Redis key name is built here. All keys of one voucher segment share the hash tag of its
// shard, so each script touches one slot and Redis Cluster never answers CROSSSLOT.

/**
 * murmur3's 32-bit finaliser over both halves of the id: every bit of the id moves the result.
 * A voucher's shard is `mix(id) % SHARDS`, not `id % SHARDS`: the low bits of a Snowflake id are
 * its sequence, 0 for the first id of a millisecond, so by `id mod SHARDS` nearly every voucher
 * would land on shard 0.
 */
export function mix(id: bigint): number {
  let h = Number(id & 0xffffffffn) ^ Math.imul(Number(id >> 32n), 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The keys of a seckill voucher's state come per stock segment (src/vouchers/segments.ts): each
 * segment lives on a shard of its own, and `shard` says which. Left out, it is the voucher's own
 * shard, where a voucher of one segment keeps everything.
 */
export interface KeySpace {
  readonly prefix: string;
  readonly shards: number;
  shardOf(voucherId: bigint): number;
  /**
   * Hash of the segment's sale state:
   * - stock, begin (ms), end (ms), limit (units per user), expire (unix s, when the keys go),
   *   waitcap (most users on the waitlist, 0: none), inflight (orders admitted, not yet stored);
   * - builtAt: Redis time (µs) when warm-3.lua built this state; reconciliation repairs only the
   *   state it observed, and a rebuilt one has another builtAt;
   * - listAdditions: bumped whenever admit-n.lua gives a user an idempotency record or a waitlist
   *   place, the two lists of users who may hear more than SOLD_OUT; "builtAt.listAdditions" is
   *   the version of a sold-out snapshot (claims/sold-out-snapshot.ts);
   * - moves: bumped by every step of a move of units into or out of the segment (lend, receive,
   *   forget): unchanged between two reads means no unit moved;
   * - verifiedOn: the replication id of the master this state was built or verified against the
   *   database on (lua/lib/master.lua); admit-n.lua admits nothing on another master.
   */
  voucher(voucherId: bigint, shard?: number): string;
  /** Hash: userId -> units held (admitted or stored, not released). */
  buyers(voucherId: bigint, shard?: number): string;
  /** Hash: `${userId}:${idempotencyKey}` -> `${orderId}:${quantity}`. */
  idempotency(voucherId: bigint, shard?: number): string;
  /** Hash per shard: orderId -> in-flight record (see records.ts). */
  inflight(shard: number): string;
  /** Stream per shard: admitted orders waiting to be stored. */
  orders(shard: number): string;
  /** Stream per shard: entries that could not become stored orders, with the reason. */
  deadLetters(shard: number): string;
  /** Hash: orderId -> 1 for released units already given back to Redis (release relay, once only). */
  released(voucherId: bigint, shard?: number): string;
  /**
   * Sorted set: userId scored by enrolment time (µs), the segment's waitlist, FIFO. A queue
   * voucher's waiting places, scored by place (restock-8.lua promotes them in that order).
   */
  waitlist(voucherId: bigint, shard?: number): string;
  /** Hash: userId -> quantity the waiting user asked for. */
  waitlistQuantities(voucherId: bigint, shard?: number): string;
  /**
   * Hash of a queue voucher's queue (queue/): frozen (1 once the draw closed the pre-queue), n
   * (entrants drawn), admitting (how many of the first places the draw admits), placed (1 once
   * every place is written), open (1 once the draw's admissions are done: later units go to the
   * next places), openedAt (ms), drawAdmitted, late (appended places so far), drawnAt (ms), seed
   * (published), closed (places still waiting when it closed), closedAt (ms), copied (before the
   * draw: the join time up to which the pre-queue is copied to the database,
   * queue/prequeue-copy.ts). Lives on the voucher's own shard, like every key of its queue.
   */
  queue(voucherId: bigint): string;
  /** Sorted set: the pre-queue's entrants scored by when they joined (µs, Redis time). */
  queueEntrants(voucherId: bigint): string;
  /** Sorted set: buyers who joined after the pre-queue closed, scored 1, 2, … in arrival order. */
  queueLate(voucherId: bigint): string;
  /** Hash: userId -> place in the queue (1-based), every place the draw or an arrival gave. */
  queuePlaces(voucherId: bigint): string;
  /** Hash: userId -> orderId, the places admitted (by the draw or later, from the waitlist). */
  queueAdmitted(voucherId: bigint, shard?: number): string;
  /** Held while a queue's draw or closing runs (one runner across processes). */
  queueLock(voucherId: bigint): string;
  /** Hash: moveId -> "toShard|units|ms", units this segment lent and the receiver may not have yet. */
  movesOut(voucherId: bigint, shard: number): string;
  /** Hash: moveId -> units, moves this segment received (each applied once). */
  movesIn(voucherId: bigint, shard: number): string;
  /** The voucher's token bucket (claims per second across every instance): "tokens:at", see lua/lib/bucket.lua. */
  voucherBucket(voucherId: bigint, shard?: number): string;
  /** One buyer's token bucket for one voucher; in the segment's slot, so admit can take it. */
  userBucket(voucherId: bigint, userId: bigint, shard?: number): string;
  /** Pub/sub channel of order events (JSON arrays), for server-sent events. */
  orderEvents(): string;
  /** Pub/sub channel of voucher ids whose units came back to Redis (clears sold-out flags). */
  unitsBack(): string;
  /** Per-user claim lock of a limited voucher (redis-semaphore adds its own `mutex:` prefix). */
  claimLock(voucherId: bigint, userId: bigint): string;
  /** Short lock while a voucher's Redis state is rebuilt from the database. */
  warmLock(voucherId: bigint): string;
  /** Held while reconciliation works on a voucher (its repairs are offsets: one at a time). */
  reconcileLock(voucherId: bigint): string;
  /** String: the voucher's last reconciliation report (JSON), for the console. */
  lastReconcile(voucherId: bigint): string;
  /** Lease of one Snowflake worker id. */
  workerLease(workerId: number): string;
  /** Highest timestamp ever issued under a worker id (guards restarts with a clock set back). */
  workerHighWater(workerId: number): string;
  /** String: a token written once and kept; when it is gone or changed, Redis lost its data (redis-watch.ts). */
  dataEpoch(): string;
  /** String: JSON of the database server that last answered (consistency/lost-orders.ts). */
  databaseServer(): string;
  /** Lock of the one process that restores what a new database server lacks. */
  databaseServerLock(): string;
  /** Every key this prefix owns (for tests and `flush`). */
  pattern(): string;
}

/** Every shard number, 0 to SHARDS − 1. */
export const allShards = (keys: Pick<KeySpace, 'shards'>): number[] => Array.from({ length: keys.shards }, (_, s) => s);

export function createKeySpace(prefix: string, shards: number): KeySpace {
  const tag = (s: number) => `${prefix}:{s${s}}`;
  const shardOf = (voucherId: bigint) => mix(voucherId) % shards;
  // A segment's keys differ from another's only in the shard tag: the shard names the segment.
  const v = (voucherId: bigint, shard = shardOf(voucherId)) => `${tag(shard)}:v:${voucherId}`;
  return {
    prefix,
    shards,
    shardOf,
    voucher: (id, s) => v(id, s),
    buyers: (id, s) => `${v(id, s)}:buyers`,
    idempotency: (id, s) => `${v(id, s)}:idem`,
    inflight: (s) => `${tag(s)}:inflight`,
    orders: (s) => `${tag(s)}:orders`,
    deadLetters: (s) => `${tag(s)}:dead`,
    released: (id, s) => `${v(id, s)}:released`,
    waitlist: (id, s) => `${v(id, s)}:wait`,
    waitlistQuantities: (id, s) => `${v(id, s)}:waitq`,
    queue: (id) => `${v(id)}:q`,
    queueEntrants: (id) => `${v(id)}:qj`,
    queueLate: (id) => `${v(id)}:ql`,
    queuePlaces: (id) => `${v(id)}:qp`,
    queueAdmitted: (id, s) => `${v(id, s)}:qa`,
    queueLock: (id) => `${v(id)}:qlock`,
    movesOut: (id, s) => `${v(id, s)}:out`,
    movesIn: (id, s) => `${v(id, s)}:in`,
    voucherBucket: (id, s) => `${v(id, s)}:tb`,
    userBucket: (id, user, s) => `${v(id, s)}:tb:${user}`,
    orderEvents: () => `${prefix}:order-events`,
    unitsBack: () => `${prefix}:units-back`,
    claimLock: (id, user) => `${prefix}:{u${user}}:claim:${id}`,
    warmLock: (id) => `${v(id)}:warming`,
    reconcileLock: (id) => `${v(id)}:reconciling`,
    lastReconcile: (id) => `${v(id)}:reconciled`,
    workerLease: (w) => `${prefix}:{w${w}}:lease`,
    workerHighWater: (w) => `${prefix}:{w${w}}:hwm`,
    dataEpoch: () => `${prefix}:epoch`,
    databaseServer: () => `${prefix}:db-server`,
    databaseServerLock: () => `${prefix}:db-server-lock`,
    pattern: () => `${prefix}:*`,
  };
}
