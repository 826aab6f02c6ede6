// Server-sent events: the one writer of every text/event-stream the API answers. A feed says what
// to send; this module opens the hijacked response, formats and writes the blocks, keeps the
// connection alive, cuts a client that stops reading, and ends every open stream when the server
// closes (closeAll, from a preClose hook: an open response would otherwise keep server.close()
// waiting for ever). Every stream is opened by `open` and kept in one set, so a rule about open
// streams is written once, there.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

export const PING_INTERVAL_MS = 15_000;
/**
 * A client that lets this much pile up is not reading: its stream is cut (it may reconnect). One
 * limit for every feed: it bounds what each open stream may hold in memory, and the largest burst
 * a feed writes (one snapshot of the live view, or one user's order events of a batch: a few KiB)
 * is far below it.
 */
const MAX_BUFFERED_BYTES = 256 * 1024;
/** How long closeAll waits for a stream's last bytes before it destroys the connection. */
const END_GRACE_MS = 1_000;
/** Client reconnection delay announced in the first block (EventSource `retry`). */
const RETRY_MS = 3_000;
const EVENT_TYPE = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** One event as an SSE block, or null when its type could not be an SSE field value. */
export function sseBlock(event: string, data: unknown): string | null {
  if (typeof event !== 'string' || !EVENT_TYPE.test(event)) return null;
  // JSON.stringify never emits a raw newline, so the data is one `data:` line.
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Sends one event on the stream (dropped when its type is not a valid SSE field value). */
export type SseSend = (event: string, data: unknown) => void;

/** What one stream sends. */
export interface SseFeed {
  /**
   * Runs before anything is written, for GET and HEAD alike: a throw is the route's ordinary
   * error answer (an unknown voucher, a store that is down).
   */
  check?(): Promise<void>;
  /**
   * Starts sending (GET only). It runs before the headers are written, so a throw is still an
   * ordinary error answer, and what it sends meanwhile waits for them. Resolves to what stops it,
   * called once when the stream ends for any reason.
   */
  start(send: SseSend): Promise<() => void>;
}

export interface SseStreams<A> {
  /**
   * Streams the feed made for `arg` until the client leaves or the server closes. Throws (before
   * anything is written, so the error handler answers) when the feed fails to start or the server
   * is closing. HEAD answers the headers only, without starting the feed.
   */
  open(request: FastifyRequest, reply: FastifyReply, arg: A): Promise<void>;
  /** Ends every open stream; resolves once their last bytes are flushed (or cut after a grace). */
  closeAll(): Promise<void>;
  /** Open streams (tests, metrics). */
  readonly size: number;
}

export interface SseOptions {
  pingIntervalMs?: number;
}

/** `name` says whose stream it is in the logs (e.g. "order events"). */
export function createSseStreams<A>(
  name: string,
  feedOf: (arg: A, request: FastifyRequest) => SseFeed,
  { pingIntervalMs = PING_INTERVAL_MS }: SseOptions = {},
): SseStreams<A> {
  /** Each open stream's `end`, which resolves when the response is finished. */
  const open = new Set<() => Promise<void>>();
  let closing = false;

  return {
    get size() {
      return open.size;
    },

    async open(request, reply, arg) {
      const feed = feedOf(arg, request);
      await feed.check?.();
      const res = reply.raw;
      if (request.method === 'HEAD') {
        // Headers only: a body would never be sent, so nothing is started for it.
        reply.hijack();
        res.writeHead(200, SSE_HEADERS);
        res.end();
        return;
      }

      const early: string[] = [];
      let write: (chunk: string) => void = (chunk) => void early.push(chunk);
      const stop = await feed.start((event, data) => {
        const block = sseBlock(event, data);
        if (block !== null) write(block);
      });
      if (closing) {
        stop();
        throw new AppError('UNAVAILABLE', 'server is shutting down');
      }
      reply.hijack();
      if (request.raw.destroyed || res.destroyed) {
        // The client left while the feed started.
        stop();
        return;
      }

      let ping: NodeJS.Timeout | null = null;
      let finished: Promise<void> | null = null;
      let cleaned = false;
      const cleanup = () => {
        if (cleaned) return;
        cleaned = true;
        stop();
        if (ping) clearInterval(ping);
        open.delete(end);
      };
      /** Ends the response (idempotent); resolves when it is flushed or the connection is gone. */
      function end(): Promise<void> {
        finished ??= new Promise<void>((resolve) => {
          cleanup();
          if (res.writableFinished || res.destroyed) return resolve();
          const grace = setTimeout(() => {
            res.destroy();
            resolve();
          }, END_GRACE_MS);
          grace.unref();
          const done = () => {
            clearTimeout(grace);
            resolve();
          };
          res.once('finish', done);
          res.once('close', done);
          res.end();
        });
        return finished;
      }

      res.writeHead(200, SSE_HEADERS);
      res.write(`: connected\nretry: ${RETRY_MS}\n\n`);
      write = (chunk) => {
        if (cleaned || res.writableEnded || res.destroyed) return;
        res.write(chunk);
        if (res.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn(`${name} client is not reading; stream cut`);
          cleanup();
          res.destroy();
        }
      };
      for (const chunk of early.splice(0)) write(chunk);
      if (cleaned) return;

      ping = setInterval(() => write(': ping\n\n'), pingIntervalMs);
      ping.unref();
      open.add(end);
      // The client went away (or the response ended): stop the feed.
      request.raw.once('close', cleanup);
      res.once('close', cleanup);
    },

    async closeAll() {
      closing = true;
      await Promise.all([...open].map((end) => end()));
    },
  };
}
