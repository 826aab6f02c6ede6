// A queue voucher's draw as a client sees it: the public summary polled from just before beginAt
// until the seed is published, then the admin stats until every admitted order is stored. Times
// are the bench's clock against the voucher's beginAt, so on another box they carry the clock
// skew between the two; drawnAt − beginAt is the deployment's own (Redis time).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Deployment, QueueSummary } from './deployment.js';

export interface DrawTimes {
  /** The summary that first showed the seed. */
  summary: QueueSummary;
  /** drawnAt − beginAt: the entrants ranked. */
  sortedAfterMs: number;
  /** The first places (as many as units, or entrants) seen admitted; null when none were due. */
  admittedAfterMs: number | null;
  publishedAfterMs: number;
  /** Every admitted order stored (none in flight); null when not within the timeout. */
  storedAfterMs: number | null;
}

export interface DrawWatch {
  voucherId: string;
  beginAtMs: number;
  /** Units on sale when the buyers joined: the places the draw admits, if enough entered. */
  units: number;
  /** Orders of the voucher stored before the run. */
  storedBefore: number;
  /** Longest wait for the draw after beginAt, and then for its orders to be stored. */
  timeoutMs: number;
}

/** Polls start this long before beginAt (the bench's clock may run behind the deployment's). */
const LEAD_MS = 200;
const SUMMARY_POLL_MS = 10;
const STATS_POLL_MS = 25;

const stored = (orders: Record<string, number>) => Object.values(orders).reduce((a, b) => a + b, 0);

export async function watchDraw(deployment: Deployment, w: DrawWatch): Promise<DrawTimes> {
  await sleep(Math.max(0, w.beginAtMs - LEAD_MS - Date.now()));
  const since = () => Date.now() - w.beginAtMs;
  let admittedAfterMs: number | null = null;
  let summary: QueueSummary;
  let drawnAt: string | null;
  for (;;) {
    summary = await deployment.queueSummary(w.voucherId);
    const due = Math.min(w.units, summary.entrants);
    if (admittedAfterMs === null && due > 0 && summary.admitted >= due) admittedAfterMs = since();
    // drawnAt is set with the seed, once the draw is published.
    if ((drawnAt = summary.drawnAt) !== null) break;
    if (since() > w.timeoutMs) {
      throw new Error(`the draw of voucher ${w.voucherId} was not published ${w.timeoutMs / 1000} s after its start: does a worker run beside the API?`);
    }
    await sleep(SUMMARY_POLL_MS);
  }
  const publishedAfterMs = since();
  const deadline = Date.now() + w.timeoutMs;
  let storedAfterMs: number | null = null;
  while (Date.now() < deadline) {
    const stats = await deployment.stats(w.voucherId);
    if (stats.inFlight === 0 && stored(stats.orders) - w.storedBefore >= summary.admitted) {
      storedAfterMs = since();
      break;
    }
    await sleep(STATS_POLL_MS);
  }
  return { summary, sortedAfterMs: Date.parse(drawnAt) - w.beginAtMs, admittedAfterMs, publishedAfterMs, storedAfterMs };
}
