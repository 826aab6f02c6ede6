// The load itself: `connections` keep-alive connections, each sending the plan's next request (a
// claim, a queue join, a buyer's read of their standing) as soon as its previous one is answered
// (the closed loop of buyers.ts), until the request count or the duration is reached. It then
// stops sending and lets every request in flight finish, so each order the server handed out is
// seen and counted (a cut-off run would hide admissions from the audit).
//
// undici's Pool.dispatch with a small handler per request rather than autocannon: it stops
// without cutting off requests in flight (autocannon needs an internal field for that), it adds no
// transitive dependencies, and with the client alone it costs 25-34 µs of CPU per request against
// 40-48 µs (against today's server both cost the same; bench/seckill/README.md, client-probe.ts).
import { performance } from 'node:perf_hooks';
import { type Dispatcher, Pool } from 'undici';
import { driveBuyers } from './buyers.js';
import type { Credentials } from './credentials.js';
import type { PlannedRequest, RequestPlan } from './plan.js';
import type { SaleRecorder } from './recorder.js';

export interface LoadOptions {
  /** http://host:port of the deployment. */
  origin: string;
  /** Path of the route every buyer calls (the voucher's claim route, its queue, …). */
  path: string;
  /** Or the path of each request (claims spread over many vouchers). */
  pathOf?: (request: PlannedRequest) => string;
  /** POST with an empty JSON body and the plan's Idempotency-Key (default), or GET. */
  method?: 'POST' | 'GET';
  connections: number;
  /** Stop after this many requests … */
  requests?: number;
  /** … or after this many seconds (whichever comes first). */
  seconds?: number;
  /** A request with no answer after this long counts as unanswered. */
  timeoutMs: number;
  /** Aborting stops sending; requests in flight still finish. */
  signal?: AbortSignal;
}

export interface LoadWindow {
  sent: number;
  startedAt: number;
  endedAt: number;
}

/** After a transport error a connection pauses briefly, so a dead server is not hammered in a spin. */
const FAILURE_PAUSE_MS = 10;
const POST_BODY = '{}';

/** One request in flight: collects the answer and hands it to the recorder. */
class BuyerCall implements Dispatcher.DispatchHandlers {
  private readonly request: PlannedRequest;
  private readonly recorder: SaleRecorder;
  private readonly next: (failed: boolean) => void;
  private status = 0;
  private readonly chunks: Buffer[] = [];
  private readonly began = performance.now();

  constructor(request: PlannedRequest, recorder: SaleRecorder, next: (failed: boolean) => void) {
    this.request = request;
    this.recorder = recorder;
    this.next = next;
  }

  onConnect(): void {}

  onHeaders(statusCode: number): boolean {
    this.status = statusCode;
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    const now = performance.now();
    const body = this.chunks.length === 1 ? this.chunks[0]!.toString('latin1') : Buffer.concat(this.chunks).toString('latin1');
    this.recorder.answer(this.request, this.status, body, now - this.began, now);
    this.next(false);
  }

  onError(err: Error & { code?: string }): void {
    this.recorder.failure(err.code ?? err.name, performance.now());
    this.next(true);
  }
}

export async function driveLoad(o: LoadOptions, plan: RequestPlan, credentials: Credentials, recorder: SaleRecorder): Promise<LoadWindow> {
  const pool = new Pool(o.origin, { connections: o.connections, pipelining: 1, headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs });
  const limit = Math.min(o.requests ?? Infinity, plan.length);
  const deadline = o.seconds === undefined ? Infinity : recorder.startedAt + o.seconds * 1000;
  const post = o.method !== 'GET';
  let sent = 0;
  // Each planned request is a buyer of its own, tried once: the plan holds the repeats.
  const send = (request: PlannedRequest) =>
    new Promise<boolean>((settled) => {
      const path = o.pathOf?.(request) ?? o.path;
      const authorization = credentials.buyers[request.buyer]!;
      const call = new BuyerCall(request, recorder, (failed) => (failed ? setTimeout(settled, FAILURE_PAUSE_MS, true) : settled(true)));
      if (post) {
        const headers = ['content-type', 'application/json', 'authorization', authorization, 'idempotency-key', request.idempotencyKey];
        pool.dispatch({ method: 'POST', path, headers, body: POST_BODY }, call);
      } else pool.dispatch({ method: 'GET', path, headers: ['authorization', authorization] }, call);
    });
  // Every connection open before the first claim, as a load balancer's pool in front of the API
  // keeps them: opened in the sale's first instant, the first wave of buyers waited on 256 TCP
  // handshakes and first requests at once (the 100-unit demo: p90 1.4–2.4 s against 0.3–0.55 s
  // with them open, three runs of each, alternated on the same loaded machine).
  await Promise.all(Array.from({ length: o.connections }, () => pool.request({ method: 'GET', path: '/healthz' }).then((r) => r.body.dump())));
  try {
    const next = () => (sent < limit && performance.now() < deadline ? plan.at(sent++) : undefined);
    await driveBuyers({ next, attempt: send, concurrency: o.connections, signal: o.signal }).done;
    return { sent, startedAt: recorder.startedAt, endedAt: performance.now() };
  } finally {
    await pool.close();
  }
}
