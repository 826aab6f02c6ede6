// Server-sent events: the one writer of every text/event-stream the API answers. A feed says what
// to send; this module opens the hijacked response, formats and writes the blocks, keeps the
// connection alive, cuts a client that stops reading, ends a stream when its caller's token
// expires, and ends every open stream when the server closes (closeAll, from a preClose hook: an
// open response would otherwise keep server.close() waiting for ever). Every stream is opened by
// `open`, holds a slot of the process's StreamSlots (shared by every feed) and is kept in one set,
// so a rule about open streams is written once, there.
import type { OutgoingHttpHeaders } from 'node:http';
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
/**
 * The last event of a stream whose caller's token expired (then the stream ends). Not `expired`:
 * that is an order event.
 */
export const TOKEN_EXPIRED_EVENT = 'token-expired';
/** setTimeout's longest delay; an expiry further ahead is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;
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

export function createStreamSlots({ perUser, total }: StreamCaps): StreamSlots {
  const byUser = new Map<bigint, number>();
  let taken = 0;
  const refuse = (message: string) => new AppError('TOO_MANY_STREAMS', message, {}, STREAMS_RETRY_AFTER_SECONDS);
  return {
    take(userId) {
      const mine = userId === undefined ? 0 : (byUser.get(userId) ?? 0);
      if (mine >= perUser) throw refuse(`at most ${perUser} event streams per user may be open at once; close one`);
      if (taken >= total) throw refuse('this server holds as many event streams as it may; retry later');
      taken++;
      if (userId !== undefined) byUser.set(userId, mine + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        taken--;
        if (userId === undefined) return;
        const left = byUser.get(userId)! - 1;
        if (left === 0) byUser.delete(userId);
        else byUser.set(userId, left);
      };
    },
    inUse: (userId) => (userId === undefined ? taken : (byUser.get(userId) ?? 0)),
  };
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** A hijacked answer loses what the hooks set (security and CORS headers): they are carried over. */
const sseHeaders = (reply: FastifyReply): OutgoingHttpHeaders => ({ ...(reply.getHeaders() as OutgoingHttpHeaders), ...SSE_HEADERS });

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
   * Streams the feed made for `arg` until the client leaves, the caller's token expires
   * (`request.principal.expiresAt`: a TOKEN_EXPIRED_EVENT, then the end) or the server closes.
   * Throws (before anything is written, so the error handler answers) when the caller or the
   * process has no slot left, the feed fails to start or the server is closing. HEAD answers as
   * GET would, with the headers only: its slot is given back at once and the feed never starts.
   */
  open(request: FastifyRequest, reply: FastifyReply, arg: A): Promise<void>;
  /** Ends every open stream; resolves once their last bytes are flushed (or cut after a grace). */
  closeAll(): Promise<void>;
  /** Open streams (tests, metrics). */
  readonly size: number;
}

export interface SseOptions {
  /** The process's slots, shared with every other feed. */
  slots: StreamSlots;
  pingIntervalMs?: number;
}

/** `name` says whose stream it is in the logs (e.g. "order events"). */
export function createSseStreams<A>(
  name: string,
  feedOf: (arg: A, request: FastifyRequest) => SseFeed,
  { slots, pingIntervalMs = PING_INTERVAL_MS }: SseOptions,
): SseStreams<A> {
  /** Each open stream's `end`, which resolves when the response is finished. */
  const open = new Set<() => Promise<void>>();
  let closing = false;

  return {
    get size() {
      return open.size;
    },

    async open(request, reply, arg) {
      // Set by the route's guard; a bare app (tests of a feed) has none.
      const caller = request.principal ?? undefined;
      const release = slots.take(caller?.userId);
      const early: string[] = [];
      let write: (chunk: string) => void = (chunk) => void early.push(chunk);
      let stop: () => void;
      try {
        const feed = feedOf(arg, request);
        await feed.check?.();
        if (request.method === 'HEAD') {
          // Headers only: a body would never be sent, so nothing is started or held for it.
          release();
          reply.hijack();
          reply.raw.writeHead(200, sseHeaders(reply));
          reply.raw.end();
          return;
        }
        stop = await feed.start((event, data) => {
          const block = sseBlock(event, data);
          if (block !== null) write(block);
        });
      } catch (err) {
        release();
        throw err;
      }
      const res = reply.raw;
      if (closing) {
        stop();
        release();
        throw new AppError('UNAVAILABLE', 'server is shutting down');
      }
      reply.hijack();
      if (request.raw.destroyed || res.destroyed) {
        // The client left while the feed started.
        stop();
        release();
        return;
      }

      let ping: NodeJS.Timeout | null = null;
      let expiry: NodeJS.Timeout | null = null;
      let finished: Promise<void> | null = null;
      let cleaned = false;
      const cleanup = () => {
        if (cleaned) return;
        cleaned = true;
        stop();
        release();
        if (ping) clearInterval(ping);
        if (expiry) clearTimeout(expiry);
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
      /** At `at` (epoch ms) the caller's token is no longer valid: so is its stream. */
      const expireAt = (at: number) => {
        const wait = at - Date.now();
        if (wait > 0) {
          expiry = setTimeout(expireAt, Math.min(wait, MAX_TIMER_MS), at);
          expiry.unref();
          return;
        }
        write(sseBlock(TOKEN_EXPIRED_EVENT, new AppError('UNAUTHORIZED', 'token expired').toBody())!);
        void end();
      };

      res.writeHead(200, sseHeaders(reply));
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
      if (caller?.expiresAt !== undefined) expireAt(caller.expiresAt);
    },

    async closeAll() {
      closing = true;
      await Promise.all([...open].map((end) => end()));
    },
  };
}
