// Which buyers a scheduled reconciliation compares. Comparing every buyer count of a voucher costs
// what the voucher has sold: a million buyers took 5–10 s a pass, every pass. Instead each pass
// compares a slice of at most `size` buyers, and the next pass the next slice, so a pass costs the
// same whatever the voucher's size and a lap over all its buyers takes ceil(buyers / size) passes.
// The voucher's stock and in-flight counter are compared on every pass (observe.ts), so drift
// that moves a unit is still found at once; what waits for its slice is a wrong buyer count alone.
//
// A slice takes buyers from both sides, so a lap meets every buyer either store knows of: the
// next steps of an HSCAN of each segment's buyer hash (counts Redis has; the database may lack
// them) and the next page of the voucher's quantity rows by primary key (quantities the database
// has; Redis may lack them). Only the users are kept here: their counts and quantities are read
// by the observation itself, inside its windows and snapshot.
import type { Db } from '../infra/db/database.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { cursorWalk, pairsOf, REDIS_STEP } from '../infra/redis/walk.js';

/** Buyers per pass: about 0.1 s of short Redis steps and a few indexed reads. */
export const BUYERS_PER_PASS = 10_000;

/** Where a voucher's lap has got to. */
interface Lap {
  /** Per segment, the HSCAN cursor to go on from; null once that scan has come round. */
  scans: (string | null)[];
  /** The last user id of the quantity rows read; done once a page came back short. */
  after: string | null;
  paged: boolean;
  /** Every slice of this lap so far was found clean. */
  clean: boolean;
}

export interface BuyerSlice {
  users: string[];
  /** The lap after this slice, and whether this slice begins and ends it. */
  next: Lap;
  startsLap: boolean;
  endsLap: boolean;
}

export interface BuyerSlices {
  /** The buyers of the voucher's next slice. */
  take(voucherId: bigint, shards: number[]): Promise<BuyerSlice>;
  /**
   * The slice was compared (and what it found repaired): the next `take` goes on after it.
   * True when it ended a lap in which every slice was clean.
   */
  compared(voucherId: bigint, slice: BuyerSlice, clean: boolean): boolean;
}

export interface BuyerSliceDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
  size?: number;
}

/**
 * Adds to `users` those of about `share` buyer counts of the hash at `key`, from `cursor`; the
 * cursor to go on from, null once the scan has come round.
 */
async function scanShare(redis: RedisClient, key: string, cursor: string, share: number, users: Set<string>): Promise<string | null> {
  let seen = 0;
  for await (const step of cursorWalk((at, count) => redis.hscan(key, at, 'COUNT', count), cursor)) {
    for (const [user] of pairsOf(step.elements)) users.add(user);
    if (step.cursor === '0') return null;
    if ((seen += REDIS_STEP) >= share) return step.cursor;
  }
  return null;
}

export function createBuyerSlices({ db, redis, keys, size = BUYERS_PER_PASS }: BuyerSliceDeps): BuyerSlices {
  const laps = new Map<bigint, Lap>();
  const fresh = (shards: number[]): Lap => ({ scans: shards.map(() => '0'), after: null, paged: false, clean: true });

  return {
    async take(voucherId, shards) {
      const kept = laps.get(voucherId);
      const lap = kept && kept.scans.length === shards.length ? kept : fresh(shards);
      const users = new Set<string>();
      const scans = [...lap.scans];
      const share = Math.ceil(size / 2 / shards.length);
      for (const [i, shard] of shards.entries()) {
        const cursor = scans[i] ?? null;
        if (cursor !== null) scans[i] = await scanShare(redis, keys.buyers(voucherId, shard), cursor, share, users);
      }
      let { after, paged } = lap;
      if (!paged) {
        const page = Math.ceil(size / 2);
        let rows = db.selectFrom('user_quantities').select('user_id').where('voucher_id', '=', voucherId.toString()).where('quantity', '>', 0);
        if (after !== null) rows = rows.where('user_id', '>', after);
        const ids = (await rows.orderBy('user_id').limit(page).execute()).map((r) => r.user_id);
        for (const id of ids) users.add(id);
        after = ids.at(-1) ?? after;
        paged = ids.length < page;
      }
      const endsLap = paged && scans.every((s) => s === null);
      return { users: [...users], next: { scans, after, paged, clean: lap.clean }, startsLap: lap !== kept, endsLap };
    },
    compared(voucherId, slice, clean) {
      const lapClean = slice.next.clean && clean;
      if (slice.endsLap) laps.delete(voucherId);
      else laps.set(voucherId, { ...slice.next, clean: lapClean });
      return slice.endsLap && lapClean;
    },
  };
}
