// Server-sent events that push one snapshot every interval (the console's GET
// /api/vouchers/:id/live). The first snapshot is taken before the reply is hijacked, so an unknown
// voucher or a store that is down is an ordinary error answer; later failures are sent as an
// `error` event and the stream goes on. Streams end when the client leaves, when it stops reading,
// and when the server closes (closeAll, from a preClose hook).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { SSE_HEADERS } from '../orders/event-stream.js';

export const LIVE_INTERVAL_MS = 1_000;
/** A client that lets this much pile up is not reading: its stream is cut. */
const MAX_BUFFERED_BYTES = 256 * 1024;
const RETRY_MS = 3_000;

export interface TickStreams {
  /** Streams `next()` every interval until the client leaves or the server closes. */
  open(request: FastifyRequest, reply: FastifyReply, next: () => Promise<unknown>): Promise<void>;
  closeAll(): void;
  readonly size: number;
}

const block = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export function createTickStreams(intervalMs = LIVE_INTERVAL_MS): TickStreams {
  const open = new Set<() => void>();
  let closing = false;
  return {
    get size() {
      return open.size;
    },
    async open(request, reply, next) {
      const first = await next();
      if (closing) throw new AppError('UNAVAILABLE', 'server is shutting down');
      const res = reply.raw;
      reply.hijack();
      res.writeHead(200, SSE_HEADERS);
      if (request.method === 'HEAD' || request.raw.destroyed) {
        res.end();
        return;
      }
      let timer: NodeJS.Timeout | null = null;
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        if (timer) clearTimeout(timer);
        open.delete(end);
        if (!res.writableEnded) res.end();
      };
      const write = (chunk: string) => {
        if (ended || res.destroyed) return end();
        res.write(chunk);
        if (res.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn('live stream client is not reading; stream cut');
          end();
          res.destroy();
        }
      };
      // One tick at a time: a slow store delays the next snapshot instead of piling them up.
      const tick = async () => {
        try {
          write(block('snapshot', await next()));
        } catch (err) {
          const e = err instanceof AppError ? err : new AppError('UNAVAILABLE', 'a store did not answer; retrying');
          if (!(err instanceof AppError)) request.log.warn({ err }, 'live snapshot failed');
          write(block('error', e.toBody()));
        }
        if (!ended) timer = setTimeout(tick, intervalMs);
      };
      open.add(end);
      request.raw.once('close', end);
      res.once('close', end);
      write(`retry: ${RETRY_MS}\n\n`);
      write(block('snapshot', first));
      if (!ended) timer = setTimeout(tick, intervalMs);
    },
    closeAll() {
      closing = true;
      for (const end of [...open]) end();
    },
  };
}
