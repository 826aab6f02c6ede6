// Server-sent events of a user's orders (GET /api/orders/events). Each open stream is one
// listener on OrderPubSub (Redis pub/sub, at most once); the stream itself only formats and
// writes. Streams end when the client goes away, when it stops reading (too much buffered), and
// when the server closes (closeAll, from a preClose hook: an open response would otherwise keep
// server.close() waiting for ever).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { OrderEvent, OrderPubSub } from './order-pubsub.js';

export const PING_INTERVAL_MS = 15_000;
/** A client that lets this much pile up is not reading: its stream is cut (it may reconnect). */
const MAX_BUFFERED_BYTES = 1024 * 1024;
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
export function formatEvent(event: OrderEvent): string | null {
  if (typeof event.type !== 'string' || !EVENT_TYPE.test(event.type)) return null;
  // JSON.stringify never emits a raw newline, so the data is one `data:` line.
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export interface EventStreams {
  /**
   * Subscribes, then hijacks the reply and streams the user's events until the client leaves or
   * the server closes. Throws (before anything is written, so the error handler answers) when the
   * subscription fails or the server is closing.
   */
  open(request: FastifyRequest, reply: FastifyReply, userId: bigint): Promise<void>;
  /** Ends every open stream; resolves once their last bytes are flushed (or cut after a grace). */
  closeAll(): Promise<void>;
  /** Open streams (tests, metrics). */
  readonly size: number;
}

export interface EventStreamOptions {
  pingIntervalMs?: number;
}

export function createEventStreams(pubsub: OrderPubSub, options: EventStreamOptions = {}): EventStreams {
  const pingIntervalMs = options.pingIntervalMs ?? PING_INTERVAL_MS;
  /** Each open stream's `end`, which resolves when the response is finished. */
  const open = new Set<() => Promise<void>>();
  let closing = false;

  return {
    get size() {
      return open.size;
    },

    async open(request, reply, userId) {
      const res = reply.raw;
      if (request.method === 'HEAD') {
        // The HEAD twin of the route: headers only, no subscription (a body would never be sent).
        reply.hijack();
        res.writeHead(200, SSE_HEADERS);
        res.end();
        return;
      }

      const user = userId.toString();
      // Events can arrive while subscribe() is still connecting: they wait for the headers.
      const early: string[] = [];
      let write: (chunk: string) => void = (chunk) => void early.push(chunk);
      const listener = (event: OrderEvent) => {
        if (event.userId !== user) return;
        const chunk = formatEvent(event);
        if (chunk !== null) write(chunk);
      };
      const unsubscribe = await pubsub.subscribe(user, listener);

      if (closing) {
        unsubscribe();
        throw new AppError('UNAVAILABLE', 'server is shutting down');
      }
      if (request.raw.destroyed || res.destroyed) {
        // The client left while we subscribed.
        unsubscribe();
        reply.hijack();
        return;
      }

      let ping: NodeJS.Timeout | null = null;
      let finished: Promise<void> | null = null;
      let cleaned = false;
      const cleanup = () => {
        if (cleaned) return;
        cleaned = true;
        unsubscribe();
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

      reply.hijack();
      res.writeHead(200, SSE_HEADERS);
      res.write(`: connected\nretry: ${RETRY_MS}\n\n`);
      write = (chunk) => {
        if (cleaned || res.writableEnded || res.destroyed) return;
        res.write(chunk);
        if (res.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn({ userId: user }, 'order events client is not reading; stream cut');
          cleanup();
          res.destroy();
        }
      };
      for (const chunk of early.splice(0)) write(chunk);
      if (cleaned) return;

      ping = setInterval(() => write(': ping\n\n'), pingIntervalMs);
      ping.unref();
      open.add(end);
      // The client went away (or the response ended): stop listening.
      request.raw.once('close', cleanup);
      res.once('close', cleanup);
    },

    async closeAll() {
      closing = true;
      await Promise.all([...open].map((end) => end()));
    },
  };
}
