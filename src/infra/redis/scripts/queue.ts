// A queue voucher's queue in Redis: queue-7.lua joins buyers or reads their state (a batch per
// call), place-4.lua ends the writing of the draw's order.
import type { KeySpace } from '../keys.js';
import { AdmitCode } from './admission.js';
import { type ScriptCalls, scriptCall } from './loader.js';

export type QueueState = 'prequeue' | 'waiting' | 'admitted' | 'closed';

/** What queue-7.lua answers for a buyer who is in the queue. */
export interface QueueStanding {
  state: QueueState;
  /** 1-based; null until the draw placed everyone. */
  place: number | null;
  /** Waiting places before this one; null until placed, 0 once admitted. */
  ahead: number | null;
  orderId: string | null;
  /** Units are left for the next places: promote them (restock with no released order). */
  promote: boolean;
  /** When the draw's admissions were done (ms), null before. */
  openedAt: number | null;
  /** Places the draw admitted, and places admitted so far. */
  drawAdmitted: number;
  admitted: number;
  /** Redis time of the answer (ms). */
  now: number;
}

export type QueueAnswer = { code: 'OK'; standing: QueueStanding } | { code: 'NOT_STARTED' | 'ENDED' | 'SOLD_OUT' | 'NOT_IN_QUEUE' };

/** queue-7.lua's code per buyer: SK_QUEUE in lua/lib/queue.lua, its refusals numbered as a claim's. */
const QueueCode = {
  IN_QUEUE: 0,
  NOT_STARTED: AdmitCode.NOT_STARTED,
  ENDED: AdmitCode.ENDED,
  SOLD_OUT: AdmitCode.SOLD_OUT,
  NOT_IN_QUEUE: 11,
} as const;

const REFUSALS = {
  [QueueCode.NOT_STARTED]: 'NOT_STARTED',
  [QueueCode.ENDED]: 'ENDED',
  [QueueCode.SOLD_OUT]: 'SOLD_OUT',
  [QueueCode.NOT_IN_QUEUE]: 'NOT_IN_QUEUE',
} as const;

export interface QueueWindow {
  voucherId: bigint;
  opensAtMs: number;
  beginAtMs: number;
  endAtMs: number;
  expireAtSeconds: number;
}

/** Most buyers in one queue call (each costs the script a few µs; nothing else runs meanwhile). */
export const MAX_QUEUE_BATCH = 64;

export interface QueueScripts {
  /**
   * Joins the buyers to the queue (a buyer who joined before keeps their place) or, with `look`,
   * only reads; an answer per buyer, in order, as if each had been a call of its own.
   */
  queue(mode: 'join' | 'look', window: QueueWindow, userIds: bigint[]): Promise<QueueAnswer[]>;
  /**
   * Places the late arrivals after the `entrants` drawn places and marks the queue placed; -1 when
   * it was placed before (nothing written), else how many arrivals it placed.
   */
  place(voucherId: bigint, entrants: number, admitting: number, drawnAtMs: number, expireAtSeconds: number): Promise<number>;
}

const orNull = (v: string | number) => (v === '' ? null : Number(v));
/** Values per buyer in queue-7.lua's answer (sk_queue_reply, lua/lib/queue.lua). */
const WIDTH = 10;

function answerAt(reply: (string | number)[], at: number): QueueAnswer {
  const code = Number(reply[at]);
  if (code !== QueueCode.IN_QUEUE) return { code: REFUSALS[code as keyof typeof REFUSALS] ?? 'NOT_IN_QUEUE' };
  const [state, place, ahead, orderId, promote, openedAt, drawAdmitted, admitted, now] = reply.slice(at + 1, at + WIDTH);
  return {
    code: 'OK',
    standing: {
      state: state as QueueState,
      place: orNull(place!),
      ahead: orNull(ahead!),
      orderId: orderId === '' ? null : String(orderId),
      promote: promote === 1,
      openedAt: orNull(openedAt!),
      drawAdmitted: Number(drawAdmitted),
      admitted: Number(admitted),
      now: Number(now),
    },
  };
}

export function queueScripts(calls: ScriptCalls, keys: KeySpace): QueueScripts {
  const queue = scriptCall(calls, 'queue');
  const place = scriptCall(calls, 'place');
  const queueKeys = (id: bigint) => [
    keys.queue(id),
    keys.queueEntrants(id),
    keys.queueLate(id),
    keys.queuePlaces(id),
    keys.waitlist(id),
    keys.queueAdmitted(id),
    keys.voucher(id),
  ];
  return {
    async queue(mode, w, userIds) {
      if (userIds.length === 0 || userIds.length > MAX_QUEUE_BATCH) throw new RangeError(`1 to ${MAX_QUEUE_BATCH} buyers per queue call, got ${userIds.length}`);
      const reply = (await queue(...queueKeys(w.voucherId), mode, w.opensAtMs, w.beginAtMs, w.endAtMs, w.expireAtSeconds, ...userIds.map(String))) as (string | number)[];
      if (reply.length !== userIds.length * WIDTH) throw new Error(`queue answered ${reply.length} values for ${userIds.length} buyer(s)`);
      return userIds.map((_, i) => answerAt(reply, i * WIDTH));
    },
    async place(voucherId, entrants, admitting, drawnAtMs, expireAtSeconds) {
      return Number(
        await place(keys.queue(voucherId), keys.queueLate(voucherId), keys.queuePlaces(voucherId), keys.waitlist(voucherId), entrants, admitting, drawnAtMs, expireAtSeconds),
      );
    },
  };
}
