// Guards in front of every /api route and every URL that matches no route (health, readiness,
// metrics, docs and the pages stay answerable). Chosen by the route the router matched, never by
// the URL's spelling: the router decodes the path (`/%61pi/…` is `/api/…`), so a test of the raw
// URL would let any encoded spelling of a claim past both guards. A 404 is counted too: it is
// cheap, but one address scanning for routes is still one address flooding the instance.
// - overload: when the event loop lags (mean delay over each second) or the heap nears its limit,
//   answer 503 UNAVAILABLE with Retry-After at once instead of queueing work that would only time
//   out (@fastify/under-pressure);
// - a coarse per-address limit, IP_RATE_LIMIT requests per IP_RATE_WINDOW_MS (@fastify/rate-limit).
//   Counted in this process's memory: it exists to stop one address flooding one instance before
//   any token is verified, must cost no Redis round trip (a sold-out answer costs none), and with
//   N instances an address gets N times the limit, which a coarse limit can afford. Fair limits
//   across instances are the Redis token buckets of the claim.
import { getHeapStatistics } from 'node:v8';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { App } from '../http.js';

export interface TrafficGuards {
  /** 0: off. */
  eventLoopDelayMs: number;
  /** 0: off. */
  heapUsedBytes: number;
  /** Requests per address and window; 0: off. */
  ipRateLimit: number;
  ipRateWindowMs: number;
}

export function trafficGuards(config: Config): TrafficGuards {
  const heapLimitMb = config.overloadHeapUsedMb ?? Math.floor((0.9 * getHeapStatistics().heap_size_limit) / 2 ** 20);
  return {
    eventLoopDelayMs: config.overloadEventLoopDelayMs,
    heapUsedBytes: heapLimitMb * 2 ** 20,
    ipRateLimit: config.ipRateLimit,
    ipRateWindowMs: config.ipRateWindowMs,
  };
}

const guarded = (request: FastifyRequest) => request.is404 || request.routeOptions.url?.startsWith('/api/') === true;
/** Addresses remembered by the per-address limit (least recently seen forgotten first). */
const IP_CACHE_SIZE = 100_000;

export async function registerTrafficGuards(app: App, guards: TrafficGuards): Promise<void> {
  if (guards.eventLoopDelayMs > 0 || guards.heapUsedBytes > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: guards.eventLoopDelayMs,
      maxHeapUsedBytes: guards.heapUsedBytes,
      // A rejected promise goes to the app's error handler (503 + Retry-After); a resolved one lets
      // the request through.
      pressureHandler: async (request) => {
        if (guarded(request)) throw new AppError('UNAVAILABLE', 'the server is overloaded; retry shortly', {}, 1);
      },
    });
  }
  if (guards.ipRateLimit > 0) {
    await app.register(rateLimit, {
      global: false,
      max: guards.ipRateLimit,
      timeWindow: guards.ipRateWindowMs,
      cache: IP_CACHE_SIZE,
      allowList: (request) => !guarded(request),
      errorResponseBuilder: (_request, context) =>
        new AppError('RATE_LIMITED', `too many requests from this address; retry in ${context.after}`, {}, Math.max(1, Math.ceil(context.ttl / 1000))),
    });
    // A root hook runs before each route's own hooks: a flood is counted before tokens are verified.
    app.addHook('onRequest', app.rateLimit());
  }
}
