// One server-sent event stream: the hijacked response of one request. It holds what the feed sends
// before the headers, writes the blocks, keeps the connection alive, cuts a client that stops
// reading, ends when its caller's token expires, and gives back its slot and stops its feed once,
// however it ends.
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/**
 * A client that lets this much pile up is not reading: its stream is cut (it may reconnect). One
 * limit for every feed: it bounds what each open stream may hold in memory, and the largest burst
 * a feed writes (one snapshot of the live view, or one user's order events of a batch: a few KiB)
 * is far below it.
 */
const MAX_BUFFERED_BYTES = 256 * 1024;
/** How long end() waits for a stream's last bytes before it destroys the connection. */
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

/** HEAD of a stream: the headers a GET would get, and no body (nothing is started or held for it). */
export function answerHeadersOnly(reply: FastifyReply): void {
  reply.hijack();
  reply.raw.writeHead(200, sseHeaders(reply));
  reply.raw.end();
}

export interface SseStreamOptions {
  /** Whose stream it is in the logs (e.g. "order events"). */
  name: string;
  pingIntervalMs: number;
  /** Gives the stream's slot back. */
  release: () => void;
  /** Called once when the stream is done, however it ends. */
  onClosed: () => void;
}

export class SseStream {
  private readonly request: FastifyRequest;
  private readonly reply: FastifyReply;
  private readonly options: SseStreamOptions;
  /** What the feed sent before the headers were written. */
  private readonly early: string[] = [];
  private begun = false;
  private closed = false;
  private ping: NodeJS.Timeout | null = null;
  private expiry: NodeJS.Timeout | null = null;
  private finished: Promise<void> | null = null;
  /** The feed's stop, once it started. */
  private stopFeed: () => void = () => undefined;

  constructor(request: FastifyRequest, reply: FastifyReply, options: SseStreamOptions) {
    this.request = request;
    this.reply = reply;
    this.options = options;
  }

  /** Sends one event (dropped when its type is not a valid SSE field value); held until begin(). */
  readonly send = (event: string, data: unknown): void => {
    const block = sseBlock(event, data);
    if (block !== null) this.write(block);
  };

  /** The feed started: close() stops it. */
  fed(stop: () => void): void {
    this.stopFeed = stop;
  }

  /** Writes the headers and what was held, then keeps the stream alive until it ends. */
  begin(expiresAt: number | undefined): void {
    const res = this.reply.raw;
    res.writeHead(200, sseHeaders(this.reply));
    res.write(`: connected\nretry: ${RETRY_MS}\n\n`);
    this.begun = true;
    for (const chunk of this.early.splice(0)) this.write(chunk);
    if (this.closed) return;
    this.ping = setInterval(() => this.write(': ping\n\n'), this.options.pingIntervalMs);
    this.ping.unref();
    // The client went away (or the response ended): stop the feed.
    this.request.raw.once('close', this.close);
    res.once('close', this.close);
    if (expiresAt !== undefined) this.expireAt(expiresAt);
  }

  /** Stops the feed, gives the slot back and stops the timers: once, however often it is called. */
  readonly close = (): void => {
    if (this.closed) return;
    this.closed = true;
    this.stopFeed();
    this.options.release();
    if (this.ping) clearInterval(this.ping);
    if (this.expiry) clearTimeout(this.expiry);
    this.options.onClosed();
  };

  /** Ends the response (idempotent); resolves when it is flushed or the connection is gone. */
  end(): Promise<void> {
    this.finished ??= new Promise<void>((resolve) => {
      this.close();
      const res = this.reply.raw;
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
    return this.finished;
  }

  private write(chunk: string): void {
    if (!this.begun) return void this.early.push(chunk);
    const res = this.reply.raw;
    if (this.closed || res.writableEnded || res.destroyed) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      this.request.log.warn(`${this.options.name} client is not reading; stream cut`);
      this.close();
      res.destroy();
    }
  }

  /** At `at` (epoch ms) the caller's token is no longer valid: so is its stream. */
  private expireAt(at: number): void {
    const wait = at - Date.now();
    if (wait > 0) {
      this.expiry = setTimeout(() => this.expireAt(at), Math.min(wait, MAX_TIMER_MS));
      this.expiry.unref();
      return;
    }
    this.write(sseBlock(TOKEN_EXPIRED_EVENT, new AppError('UNAUTHORIZED', 'token expired').toBody())!);
    void this.end();
  }
}
