// The loyalty service's one change of state: 10 points per unit of a paid order, once per event.
import type { Redis } from 'ioredis';

/** Longer than any redelivery takes: the relay re-sends within seconds, a broker outage within hours. */
const DEDUPE_TTL_SECONDS = 7 * 24 * 3600;

// The grant and the event id's mark in ONE script, so they happen together or not at all: a crash
// between two commands can neither drop an event (marked, never granted) nor grant it twice
// (granted, never marked). Grant first, then mark: a grant that fails (a balance that is no
// number) writes nothing, and the redelivery tries again.
// KEYS[1] the event's mark  KEYS[2] balances hash  ARGV[1] mark TTL (s)  ARGV[2] userId  ARGV[3] points
// Returns 1 when granted now, 0 for an event granted before.
const GRANT_ONCE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[2], ARGV[3])
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
return 1`;

export interface PaidOrder {
  eventId: string;
  userId: string;
  quantity: number;
}

export interface Points {
  /** Grants the order's points unless its event was handled before; true when granted now. */
  grantOnce(e: PaidOrder): Promise<boolean>;
}

/** Keys `<prefix>:balance` (userId -> points) and `<prefix>:seen:<eventId>`, on one Redis server. */
export function createPoints(redis: Redis, prefix = 'points'): Points {
  return {
    async grantOnce(e) {
      const granted = await redis.eval(GRANT_ONCE, 2, `${prefix}:seen:${e.eventId}`, `${prefix}:balance`, DEDUPE_TTL_SECONDS, e.userId, 10 * e.quantity);
      return granted === 1;
    },
  };
}
