// A queue voucher's queue in Redis: queue-7.lua joins a buyer or reads their state, place-4.lua
// ends the writing of the draw's order.
import type { KeySpace } from '../keys.js';
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

const REFUSALS = { 3: 'NOT_STARTED', 4: 'ENDED', 6: 'SOLD_OUT', 11: 'NOT_IN_QUEUE' } as const;

export interface QueueWindow {
  voucherId: bigint;
  opensAtMs: number;
  beginAtMs: number;
  endAtMs: number;
  expireAtSeconds: number;
}

export interface QueueScripts {
  /** Joins `userId` to the queue (a buyer who joined before keeps their place) or, with `look`, only reads. */
  queue(mode: 'join' | 'look', window: QueueWindow, userId: bigint): Promise<QueueAnswer>;
  /**
   * Places the late arrivals after the `entrants` drawn places and marks the queue placed; -1 when
   * it was placed before (nothing written), else how many arrivals it placed.
   */
  place(voucherId: bigint, entrants: number, admitting: number, drawnAtMs: number, expireAtSeconds: number): Promise<number>;
}

const orNull = (v: string | number) => (v === '' ? null : Number(v));

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
    async queue(mode, w, userId) {
      const reply = (await queue(...queueKeys(w.voucherId), mode, userId.toString(), w.opensAtMs, w.beginAtMs, w.endAtMs, w.expireAtSeconds)) as (string | number)[];
      const code = Number(reply[0]);
      if (code !== 0) return { code: REFUSALS[code as keyof typeof REFUSALS] ?? 'NOT_IN_QUEUE' };
      const [, state, placeText, ahead, orderId, promote, openedAt, drawAdmitted, admitted, now] = reply;
      return {
        code: 'OK',
        standing: {
          state: state as QueueState,
          place: orNull(placeText!),
          ahead: orNull(ahead!),
          orderId: orderId === '' ? null : String(orderId),
          promote: promote === 1,
          openedAt: orNull(openedAt!),
          drawAdmitted: Number(drawAdmitted),
          admitted: Number(admitted),
          now: Number(now),
        },
      };
    },
    async place(voucherId, entrants, admitting, drawnAtMs, expireAtSeconds) {
      return Number(
        await place(keys.queue(voucherId), keys.queueLate(voucherId), keys.queuePlaces(voucherId), keys.waitlist(voucherId), entrants, admitting, drawnAtMs, expireAtSeconds),
      );
    },
  };
}
