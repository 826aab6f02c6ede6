// buildApp: the Fastify instance with every route registered explicitly and one error handler.
// It never listens; main.ts (or a test) decides that.
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyReply, type FastifyRequest, type FastifySchema, LogController } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Logger } from 'pino';
import type { MetricsSource } from './cluster-metrics.js';
import type { Guards } from './auth/guards.js';
import { AppError } from './errors.js';
import { isDatabaseUnreachable, isInvalidData } from './infra/db/errors.js';
import { publicReadiness, type Readiness } from './readiness.js';
import { type App, errorAnswers, SCHEMA_FORMATS, schemaErrorMessage } from './http.js';
import { type LifecycleRouteDeps, registerLifecycleRoutes } from './lifecycle/routes.js';
import { type ClaimTokenRouteDeps, registerClaimTokenRoute } from './claims/claim-token-route.js';
import { type HttpLimits, serverOptions } from './protection/http-limits.js';
import { registerGracefulClose } from './protection/graceful-close.js';
import { registerCors } from './protection/cors.js';
import { registerSecurityHeaders, SECURITY_HEADERS } from './protection/security-headers.js';
import { registerTrafficGuards, type TrafficGuards } from './protection/traffic-guards.js';
import { type ConsistencyRouteDeps, registerConsistencyRoutes } from './consistency/routes.js';
import { type ClaimRouteDeps, registerClaimRoutes } from './claims/routes.js';
import { type OrderRouteDeps, registerOrderRoutes } from './orders/routes.js';
import { type VoucherRouteDeps, registerVoucherRoutes } from './vouchers/routes.js';
import { registerWaitlistRoutes, type WaitlistRouteDeps } from './waitlist/routes.js';
import { type QueueRouteDeps, registerQueueRoutes } from './queue/routes.js';
import { registerWebRoutes } from './web/routes.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

export interface AppDeps {
  logger: Logger;
  guards: Guards;
  metrics: MetricsSource;
  /** Counts every error answer by its code (429s, 503s and 403s of the protections included). */
  countError(code: string): void;
  /** Each store's state, latency and error (readiness.ts); /readyz shows all but the error. */
  readiness(): Promise<Readiness>;
  httpLimits: HttpLimits;
  /** CORS_ORIGINS (protection/cors.ts); empty: no CORS headers. */
  corsOrigins: string[];
  trafficGuards: TrafficGuards;
  vouchers: Omit<VoucherRouteDeps, 'guards'>;
  claims: Omit<ClaimRouteDeps, 'guards'>;
  claimTokens: Omit<ClaimTokenRouteDeps, 'guards' | 'directory'>;
  orders: Omit<OrderRouteDeps, 'guards'>;
  lifecycle: Omit<LifecycleRouteDeps, 'guards'>;
  waitlist: Omit<WaitlistRouteDeps, 'guards'>;
  queue: Omit<QueueRouteDeps, 'guards'>;
  consistency: Omit<ConsistencyRouteDeps, 'guards' | 'metrics'>;
}

// The OpenAPI UI's own scripts, styles and images, and calls to this origin ("Try it out").
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

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
    database: Type.Object(Dependency),
  },
  { description: 'each store\'s state and latency' },
);

const text = (mediaType: string, description: string) => ({ description, content: { [mediaType]: { schema: Type.String() } } });

/**
 * The OpenAPI UI and the document are routes of the contract: shown in the document, which the
 * plugin leaves them out of (its own assets under /docs/static stay out). Their schemas are the
 * document's only: the routes answer as the plugin made them.
 */
const DOCS_ROUTES: Record<string, FastifySchema> = {
  '/docs': { tags: ['docs'], summary: 'The OpenAPI UI', security: [], response: { 200: text('text/html', 'the OpenAPI UI (HTML)'), ...errorAnswers({}) } },
  '/docs/json': {
    tags: ['docs'],
    summary: 'This OpenAPI document (JSON)',
    security: [],
    response: { 200: { description: 'the OpenAPI 3 document', type: 'object', additionalProperties: true }, ...errorAnswers({}) },
  },
  '/docs/yaml': { tags: ['docs'], summary: 'This OpenAPI document (YAML)', security: [], response: { 200: text('application/x-yaml', 'the OpenAPI 3 document'), ...errorAnswers({}) } },
};

const SOCKET_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/** Redis or the database unreachable: a 503 the client may retry, not a 500. */
function isInfrastructureError(err: Error & { code?: string }): boolean {
  return (
    (err.code !== undefined && SOCKET_ERROR_CODES.has(err.code)) ||
    isDatabaseUnreachable(err) ||
    err.name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|Stream isn't writeable|connect ETIMEDOUT|Command timed out|All sentinels are unreachable|READONLY|NOREPLICAS|MASTERDOWN|LOADING|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|refresh slots cache|None of startup nodes/.test(err.message)
  );
}

/** Any error as the contract's answer (status, code, message); unexpected ones are logged. */
function toAppError(err: FastifyError, log: FastifyBaseLogger): AppError {
  if (err instanceof AppError) return err;
  if (err.validation) {
    // The field's path too (body: /stock must be >= 1), so a form can say which field is wrong.
    const first = err.validation[0];
    const path = first?.instancePath ? `${first.instancePath} ` : '';
    const message = `${err.validationContext ?? 'request'} ${path}${schemaErrorMessage(first)}`.replace(/^body /, 'body: ');
    return new AppError('INVALID_REQUEST', message);
  }
  if (err.statusCode === 413) return new AppError('PAYLOAD_TOO_LARGE', `body exceeds ${BODY_LIMIT_BYTES} bytes`);
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return new AppError('INVALID_REQUEST', err.message);
  // A value the schemas let through that a database cannot store: bad input all the same.
  if (isInvalidData(err)) return new AppError('INVALID_REQUEST', 'a value of the request cannot be stored');
  if (isInfrastructureError(err)) {
    log.warn({ err }, 'infrastructure unavailable');
    return new AppError('UNAVAILABLE', 'service temporarily unavailable; retry shortly');
  }
  log.error({ err }, 'unhandled error');
  return new AppError('INTERNAL', 'internal error');
}

export async function buildApp(deps: AppDeps): Promise<App> {
  const app = Fastify({
    ...serverOptions(deps.httpLimits),
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Per-request log lines would cost more than the admission itself; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, formats: SCHEMA_FORMATS } },
    // A URL the router cannot decode (`%zz`) or a path parameter over its 100 characters is bad
    // input like any other: Fastify's own answers (400 and 414) are not in the contract's shape.
    frameworkErrors: (err: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      const answer = new AppError('INVALID_REQUEST', err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'the URL is not valid percent-encoding');
      deps.countError(answer.code);
      return reply.headers(SECURITY_HEADERS).code(answer.status).send(answer.toBody());
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorateRequest('principal', null);

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const answer = toAppError(err, request.log);
    deps.countError(answer.code);
    const retryAfter = answer.retryAfterSeconds ?? (answer.status === 503 ? 1 : undefined);
    if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
    return reply.code(err.statusCode === 415 ? 415 : answer.status).send(answer.toBody());
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );

  // First: every answer carries them, those of the hooks below included.
  registerSecurityHeaders(app);
  const closing = registerGracefulClose(app, deps.httpLimits.shutdownGraceMs);
  // Before the traffic guards, so that their 429s and 503s reach an allowed page readable.
  registerCors(app, deps.corsOrigins);
  await registerTrafficGuards(app, deps.trafficGuards);
  await app.register(swagger, {
    openapi: {
      info: { title: 'seckill engine', version: '0.1.0', description: 'Flash-sale engine API (docs/api.md in the repository)' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
    // The plugin registers the UI's route as /docs and /docs/ and lists it under the latter.
    transform: ({ schema, url }) => {
      const path = url.replace(/(?<=.)\/$/, '');
      return { schema: DOCS_ROUTES[path] ?? schema, url: path };
    },
  });
  // BaseLayout: the routes without the top bar, whose logo is an SVG with an inline style.
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: DOCS_CSP, uiConfig: { layout: 'BaseLayout' } });

  app.get(
    '/healthz',
    {
      schema: {
        tags: ['probes'],
        summary: 'Liveness: 200 while the process runs',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorAnswers({}) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  const readinessAnswer = publicReadiness(deps.readiness, deps.logger);
  const readinessSchema = {
    tags: ['probes'],
    summary: 'Readiness: 200 while Redis and the database answer within 800 ms (degraded: one is slow, or Redis lost its data in the last minute)',
    security: [],
    response: {
      200: ReadinessBody,
      ...errorAnswers({ 503: 'UNAVAILABLE: a store is down (the body also has the report of a 200: status, redis, database) or the server is shutting down; see Retry-After' }),
    },
  };
  app.get('/readyz', { schema: readinessSchema }, async (_request, reply) => {
    if (closing()) return reply.code(503).header('retry-after', '1').send({ code: 'UNAVAILABLE', message: 'shutting down' });
    const readiness = await readinessAnswer();
    if (readiness.status !== 'unavailable') return readiness;
    const down = [readiness.redis.state === 'down' && 'Redis', readiness.database.state === 'down' && 'the database'].filter(Boolean);
    return reply.code(503).header('retry-after', '1').send({ code: 'UNAVAILABLE', message: `not ready: ${down.join(' and ')} unreachable`, ...readiness });
  });
  const metricsSchema = {
    tags: ['probes'],
    summary: 'Prometheus metrics (text exposition format)',
    security: [],
    response: { 200: text('text/plain', 'the metrics of this process (or the sum over the API processes of a supervisor)'), ...errorAnswers({}) },
  };
  app.get('/metrics', { schema: metricsSchema }, async (_request, reply) =>
    reply.type(deps.metrics.contentType).send(await deps.metrics.metrics()),
  );

  registerVoucherRoutes(app, { guards: deps.guards, ...deps.vouchers });
  registerClaimRoutes(app, { guards: deps.guards, ...deps.claims });
  registerClaimTokenRoute(app, { guards: deps.guards, directory: deps.claims.directory, ...deps.claimTokens });
  registerOrderRoutes(app, { guards: deps.guards, ...deps.orders });
  registerLifecycleRoutes(app, { guards: deps.guards, ...deps.lifecycle });
  registerWaitlistRoutes(app, { guards: deps.guards, ...deps.waitlist });
  registerQueueRoutes(app, { guards: deps.guards, ...deps.queue });
  registerConsistencyRoutes(app, { guards: deps.guards, metrics: deps.metrics, ...deps.consistency });
  registerWebRoutes(app);
  return app;
}
