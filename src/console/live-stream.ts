// Server-sent events that push one snapshot every interval (the console's GET
// /api/vouchers/:id/live). The first snapshot is taken before anything is written (HEAD too), so
// an unknown voucher or a store that is down is an ordinary error answer; later failures are sent
// as an `error` event and the stream goes on. The SSE writer does the rest.
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../errors.js';
import { createSseStreams, type SseFeed, type SseStreams, type StreamSlots } from '../sse.js';

export const LIVE_INTERVAL_MS = 1_000;

/** Open streams, each of the snapshots `next` takes (the `open` argument). */
export type TickStreams = SseStreams<() => Promise<unknown>>;

function snapshots(next: () => Promise<unknown>, intervalMs: number, log: FastifyBaseLogger): SseFeed {
  let first: unknown;
  return {
    async check() {
      first = await next();
    },
    async start(send) {
      let timer: NodeJS.Timeout | null = null;
      let stopped = false;
      // One tick at a time: a slow store delays the next snapshot instead of piling them up.
      const tick = async () => {
        try {
          send('snapshot', await next());
        } catch (err) {
          const e = err instanceof AppError ? err : new AppError('UNAVAILABLE', 'a store did not answer; retrying');
          if (!(err instanceof AppError)) log.warn({ err }, 'live snapshot failed');
          send('error', e.toBody());
        }
        if (!stopped) timer = setTimeout(tick, intervalMs);
      };
      send('snapshot', first);
      timer = setTimeout(tick, intervalMs);
      return () => {
        stopped = true;
        if (timer) clearTimeout(timer);
      };
    },
  };
}

/** `slots`: the process's, shared with the other feeds. */
export function createTickStreams(slots: StreamSlots, intervalMs = LIVE_INTERVAL_MS): TickStreams {
  return createSseStreams('live view', (next: () => Promise<unknown>, request) => snapshots(next, intervalMs, request.log), { slots });
}
