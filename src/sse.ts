// Server-sent events: the one writer of every text/event-stream the API answers. A feed says what
// to send; each stream (sse/stream.ts) writes it on one hijacked response. Every stream is opened
// by `open`, holds a slot of the process's StreamSlots (sse/slots.ts, shared by every feed) and is
// kept in one set, so a rule about open streams is written once, here; closeAll (from a preClose
// hook) ends them all, as an open response would otherwise keep server.close() waiting for ever.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';
import type { StreamSlots } from './sse/slots.js';
import { answerHeadersOnly, SseStream } from './sse/stream.js';

export { createStreamSlots, type StreamCaps, type StreamSlots } from './sse/slots.js';

export const PING_INTERVAL_MS = 15_000;

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

type FeedOf<A> = (arg: A, request: FastifyRequest) => SseFeed;

/** The streams of one feed; `name` says whose stream it is in the logs (e.g. "order events"). */
class FeedStreams<A> implements SseStreams<A> {
  private readonly name: string;
  private readonly feedOf: FeedOf<A>;
  private readonly slots: StreamSlots;
  private readonly pingIntervalMs: number;
  private readonly streams = new Set<SseStream>();
  private closing = false;

  constructor(name: string, feedOf: FeedOf<A>, slots: StreamSlots, pingIntervalMs: number) {
    this.name = name;
    this.feedOf = feedOf;
    this.slots = slots;
    this.pingIntervalMs = pingIntervalMs;
  }

  get size(): number {
    return this.streams.size;
  }

  async open(request: FastifyRequest, reply: FastifyReply, arg: A): Promise<void> {
    // Set by the route's guard; a bare app (tests of a feed) has none.
    const caller = request.principal ?? undefined;
    const stream = new SseStream(request, reply, {
      name: this.name,
      pingIntervalMs: this.pingIntervalMs,
      release: this.slots.take(caller?.userId),
      onClosed: () => this.streams.delete(stream),
    });
    try {
      const feed = this.feedOf(arg, request);
      await feed.check?.();
      if (request.method === 'HEAD') {
        stream.close();
        return answerHeadersOnly(reply);
      }
      stream.fed(await feed.start(stream.send));
    } catch (err) {
      stream.close();
      throw err;
    }
    if (this.closing) {
      stream.close();
      throw new AppError('UNAVAILABLE', 'server is shutting down');
    }
    reply.hijack();
    // The client left while the feed started.
    if (request.raw.destroyed || reply.raw.destroyed) return stream.close();
    this.streams.add(stream);
    stream.begin(caller?.expiresAt);
  }

  async closeAll(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.streams].map((stream) => stream.end()));
  }
}

export function createSseStreams<A>(name: string, feedOf: FeedOf<A>, { slots, pingIntervalMs = PING_INTERVAL_MS }: SseOptions): SseStreams<A> {
  return new FeedStreams(name, feedOf, slots, pingIntervalMs);
}
