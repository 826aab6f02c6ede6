// The probes: /healthz (liveness), /readyz (readiness: both stores answer) and /metrics (Prometheus).
import type { Logger } from 'pino';
import { Type } from 'typebox';
import type { MetricsSource } from './cluster-metrics.js';
import { type App, errorAnswers, textResponse } from './http.js';
import { publicReadiness, type Readiness } from './readiness.js';

const Dependency = {
  state: Type.Enum(['ok', 'degraded', 'down']),
  latencyMs: Type.Union([Type.Number(), Type.Null()]),
  downSince: Type.Optional(Type.String({ description: 'when this process first saw it down' })),
};
const ReadinessBody = Type.Object(
  {
    status: Type.Enum(['ready', 'degraded', 'unavailable']),
    redis: Type.Object({
      ...Dependency,
      dataLostAt: Type.Optional(Type.String({ description: 'the last time this process saw Redis lose its data' })),
      dataLosses: Type.Integer({ minimum: 0 }),
    }),
    database: Type.Object({
      ...Dependency,
      serverChangedAt: Type.Optional(Type.String({ description: 'when another database server than the one before began answering (a failover); degraded for a minute after' })),
    }),
  },
  { description: 'each store\'s state and latency' },
);

const healthSchema = {
  tags: ['probes'],
  summary: 'Liveness: 200 while the process runs',
  security: [],
  response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorAnswers({}) },
};

const readinessSchema = {
  tags: ['probes'],
  summary: 'Readiness: 200 while Redis and the database answer within 800 ms (degraded: one is slow, Redis lost its data or the database failed over in the last minute)',
  security: [],
  response: {
    200: ReadinessBody,
    ...errorAnswers({ 503: 'UNAVAILABLE: a store is down (the body also has the report of a 200: status, redis, database) or the server is shutting down; see Retry-After' }),
  },
};

const metricsSchema = {
  tags: ['probes'],
  summary: 'Prometheus metrics (text exposition format)',
  security: [],
  response: { 200: textResponse('text/plain', 'the metrics of this process (or the sum over the API processes of a supervisor)'), ...errorAnswers({}) },
};

export interface ProbeRouteDeps {
  logger: Logger;
  metrics: MetricsSource;
  readiness(): Promise<Readiness>;
  /** Whether the server is shutting down (protection/graceful-close.ts): then not ready. */
  closing(): boolean;
}

export function registerProbeRoutes(app: App, { logger, metrics, readiness, closing }: ProbeRouteDeps): void {
  app.get('/healthz', { schema: healthSchema }, async () => ({ status: 'ok' as const }));
  const readinessAnswer = publicReadiness(readiness, logger);
  app.get('/readyz', { schema: readinessSchema }, async (_request, reply) => {
    if (closing()) return reply.code(503).header('retry-after', '1').send({ code: 'UNAVAILABLE', message: 'shutting down' });
    const answer = await readinessAnswer();
    if (answer.status !== 'unavailable') return answer;
    const down = [answer.redis.state === 'down' && 'Redis', answer.database.state === 'down' && 'the database'].filter(Boolean);
    return reply.code(503).header('retry-after', '1').send({ code: 'UNAVAILABLE', message: `not ready: ${down.join(' and ')} unreachable`, ...answer });
  });
  app.get('/metrics', { schema: metricsSchema }, async (_request, reply) => reply.type(metrics.contentType).send(await metrics.metrics()));
}
