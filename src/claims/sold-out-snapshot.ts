// The sold-out snapshot: who, on a sold-out voucher, may hear more than SOLD_OUT from the
// sold-out cache (sold-out-cache.ts). Plain commands, not a script: it is read in short steps.
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { cursorWalk, pairsOf, type ScanStep } from '../infra/redis/walk.js';

/**
 * Who, on a sold-out voucher, may get another answer than a plain SOLD_OUT: the users with an
 * idempotency record (a retry may be a replay) and the users on the waitlist, as they were at
 * `version`, "builtAt.listAdditions" of the voucher hash as admit-n.lua answers it: builtAt
 * changes when the state is rebuilt, listAdditions whenever admit adds a user to either list.
 * (Restock only takes users off the waitlist, after which it is not full, so no sold-out flag
 * stands until an enrolment has moved the version again.)
 */
export type SoldOutSnapshot =
  | { version: string; tooLarge: false; keyedUsers: Set<string>; waitingUsers: Set<string> }
  | { version: string; tooLarge: true };

/** Walks of lists that keep growing before the read gives up. */
const SNAPSHOT_ATTEMPTS = 3;

/** Hands `add` every member of a walk (HSCAN / ZSCAN) to its end; false as soon as `full()`, the rest unread. */
async function walkMembers(scan: ScanStep, add: (member: string) => void, full: () => boolean): Promise<boolean> {
  for await (const { elements } of cursorWalk(scan)) {
    for (const [member] of pairsOf(elements)) add(member);
    if (full()) return false;
  }
  return true;
}

/**
 * The sold-out snapshot of a voucher (of one segment), unless its users number more than `max`;
 * null when the lists grew during every attempt to read them.
 *
 * Read in steps of REDIS_STEP elements: one script reading 20,000 records held Redis for 29–65
 * ms, and every claim waited; a step holds it for 0.3–0.6 ms. The version is read before and
 * after the walk of both lists; unchanged, nothing was added to either meanwhile, nor was the
 * state rebuilt. Removals may have happened, but HSCAN and ZSCAN return every element present
 * for the whole walk, so the result holds every user still listed at the end, perhaps some who
 * left meanwhile, and none who was not listed at the start: no staler than one atomic read at the
 * start. That is safe: a keyed user who is no longer one only has their claims go to Redis, and a
 * user leaves the waitlist only when promoted, when units coming back clear the flag. (ZRANGE by
 * ranks would not do: a removal shifts the ranks, and the next range skips a user who stayed.)
 */
export async function readSoldOutSnapshot(redis: RedisClient, keys: KeySpace, voucherId: bigint, max: number): Promise<SoldOutSnapshot | null> {
  const idempotency = keys.idempotency(voucherId);
  const waitlist = keys.waitlist(voucherId);
  const versionNow = async () => {
    const [builtAt, listAdditions] = await redis.hmget(keys.voucher(voucherId), 'builtAt', 'listAdditions');
    return `${builtAt ?? ''}.${listAdditions ?? '0'}`;
  };
  const [first, records, places] = await Promise.all([versionNow(), redis.hlen(idempotency), redis.zcard(waitlist)]);
  let version = first;
  // A walk costs by records (a user may hold several): more than max of them, no walk at all.
  if (records + places > max) return { version, tooLarge: true };
  for (let attempt = 0; attempt < SNAPSHOT_ATTEMPTS; attempt++) {
    // Sets: a scan may return an element twice (while the hash or set is resized).
    const keyedUsers = new Set<string>();
    const waitingUsers = new Set<string>();
    const full = () => keyedUsers.size + waitingUsers.size > max;
    const walked =
      (await walkMembers((c, count) => redis.hscan(idempotency, c, 'COUNT', count), (field) => keyedUsers.add(field.slice(0, field.indexOf(':'))), full)) &&
      (await walkMembers((c, count) => redis.zscan(waitlist, c, 'COUNT', count), (user) => waitingUsers.add(user), full));
    // The lists grew past the cap during the walk: too large to hold, whatever the version.
    if (!walked) return { version, tooLarge: true };
    const after = await versionNow();
    if (after === version) return { version, tooLarge: false, keyedUsers, waitingUsers };
    version = after;
  }
  return null;
}
