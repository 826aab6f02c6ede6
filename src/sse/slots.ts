// The event streams one process holds open, counted against its caps (SSE_MAX_PER_USER,
// SSE_MAX_STREAMS) and shared by every feed, so a client cannot hold more than its share.
import { AppError } from '../errors.js';

/**
 * Retry-After of TOO_MANY_STREAMS. A slot frees only when a stream ends (its client leaves, its
 * token expires), never on a schedule: this paces a client that retries in a loop (the announced
 * reconnection delay is 3 s) ten times slower, while a user who closed a tab (its slot is free at
 * once) is back within half a minute.
 */
export const STREAMS_RETRY_AFTER_SECONDS = 30;

export interface StreamCaps {
  /** SSE_MAX_PER_USER */
  perUser: number;
  /** SSE_MAX_STREAMS */
  total: number;
}

/** The event streams one process holds open, counted against its caps, shared by every feed. */
export interface StreamSlots {
  /**
   * Takes a slot for `userId` (undefined: a stream without a caller, counted in the total only),
   * or throws 429 TOO_MANY_STREAMS. Returns what gives it back: once, however often it is called.
   */
  take(userId: bigint | undefined): () => void;
  /** Slots taken: in all, or by one user. */
  inUse(userId?: bigint): number;
}

const refuse = (message: string) => new AppError('TOO_MANY_STREAMS', message, {}, STREAMS_RETRY_AFTER_SECONDS);

export function createStreamSlots({ perUser, total }: StreamCaps): StreamSlots {
  const byUser = new Map<bigint, number>();
  let taken = 0;
  const giveBack = (userId: bigint | undefined) => {
    taken--;
    if (userId === undefined) return;
    const left = byUser.get(userId)! - 1;
    if (left === 0) byUser.delete(userId);
    else byUser.set(userId, left);
  };
  return {
    take(userId) {
      const mine = userId === undefined ? 0 : (byUser.get(userId) ?? 0);
      if (mine >= perUser) throw refuse(`at most ${perUser} event streams per user may be open at once; close one`);
      if (taken >= total) throw refuse('this server holds as many event streams as it may; retry later');
      taken++;
      if (userId !== undefined) byUser.set(userId, mine + 1);
      let released = false;
      return () => {
        if (!released) giveBack(userId);
        released = true;
      };
    },
    inUse: (userId) => (userId === undefined ? taken : (byUser.get(userId) ?? 0)),
  };
}
