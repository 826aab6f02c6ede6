// buildApp: the Fastify instance with every route registered explicitly and one error handler.
// It never listens; main.ts (or a test) decides that.
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { MetricsSource } from './cluster-metrics.js';
import type { Guards } from './auth/guards.js';
import { AppError } from './errors.js';
import { isDatabaseUnreachable, isInvalidData, isLockConflict } from './infra/db/errors.js';
import type { Readiness } from './readiness.js';
import { type App, SCHEMA_FORMATS, schemaErrorMessage } from './http.js';
import { registerOpenApiDocs } from './openapi-docs.js';
import { registerProbeRoutes } from './probe-routes.js';
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
import { registerWebRoutes, type WebRouteDeps } from './web/routes.js';
import { type PaymentRouteDeps, registerPaymentRoutes } from './payments/routes.js';
import { registerStripeWebhook, type StripeWebhookDeps } from './payments/stripe-webhook.js';
import { registerRequestSpans } from './tracing/request-spans.js';

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
  /** Tracing on: a span per request, and whether one without a traceparent starts a trace (tracing/request-spans.ts). */
  requestSampling: (() => boolean) | null;
  trafficGuards: TrafficGuards;
  vouchers: Omit<VoucherRouteDeps, 'guards'>;
  claims: Omit<ClaimRouteDeps, 'guards'>;
  claimTokens: Omit<ClaimTokenRouteDeps, 'guards' | 'directory'>;
  orders: Omit<OrderRouteDeps, 'guards'>;
  lifecycle: Omit<LifecycleRouteDeps, 'guards'>;
  waitlist: Omit<WaitlistRouteDeps, 'guards'>;
  queue: Omit<QueueRouteDeps, 'guards'>;
  consistency: Omit<ConsistencyRouteDeps, 'guards' | 'metrics'>;
  payments: Omit<PaymentRouteDeps, 'guards'>;
  stripeWebhook: StripeWebhookDeps;
  pages: WebRouteDeps;
}

const SOCKET_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/** Redis or the database unreachable, or a transaction rolled back by a lock conflict: a 503 the client may retry, not a 500. */
function isInfrastructureError(err: Error & { code?: string }): boolean {
  return (
    (err.code !== undefined && SOCKET_ERROR_CODES.has(err.code)) ||
    isDatabaseUnreachable(err) ||
    isLockConflict(err) ||
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

/** The Fastify instance: limits, logging, ajv's options and the answers of its own errors. */
function createFastify(deps: AppDeps): App {
  return Fastify({
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
}

/** Every error, and a route that does not exist, answered in the contract's shape and counted. */
function registerErrorAnswers(app: App, countError: AppDeps['countError']): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const answer = toAppError(err, request.log);
    countError(answer.code);
    const retryAfter = answer.retryAfterSeconds ?? (answer.status === 503 ? 1 : undefined);
    if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
    return reply.code(err.statusCode === 415 ? 415 : answer.status).send(answer.toBody());
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );
}

/** The hooks every request passes; returns whether the server is shutting down. */
async function registerProtections(app: App, deps: AppDeps): Promise<() => boolean> {
  // First: every answer carries them, those of the hooks below included.
  registerSecurityHeaders(app);
  const closing = registerGracefulClose(app, deps.httpLimits.shutdownGraceMs);
  // Before the traffic guards, so that their 429s and 503s reach an allowed page readable.
  registerCors(app, deps.corsOrigins);
  await registerTrafficGuards(app, deps.trafficGuards);
  return closing;
}

function registerFeatureRoutes(app: App, deps: AppDeps): void {
  const { guards } = deps;
  registerVoucherRoutes(app, { guards, ...deps.vouchers });
  registerClaimRoutes(app, { guards, ...deps.claims });
  registerClaimTokenRoute(app, { guards, directory: deps.claims.directory, ...deps.claimTokens });
  registerOrderRoutes(app, { guards, ...deps.orders });
  registerLifecycleRoutes(app, { guards, ...deps.lifecycle });
  registerPaymentRoutes(app, { guards, ...deps.payments });
  registerWaitlistRoutes(app, { guards, ...deps.waitlist });
  registerQueueRoutes(app, { guards, ...deps.queue });
  registerConsistencyRoutes(app, { guards, metrics: deps.metrics, ...deps.consistency });
  registerStripeWebhook(app, deps.stripeWebhook);
  registerWebRoutes(app, deps.pages);
}

export async function buildApp(deps: AppDeps): Promise<App> {
  const app = createFastify(deps);
  // First: the spans cover every hook, the protections' answers included.
  if (deps.requestSampling) registerRequestSpans(app, deps.requestSampling);
  app.decorateRequest('principal', null);
  registerErrorAnswers(app, deps.countError);
  const closing = await registerProtections(app, deps);
  await registerOpenApiDocs(app);
  registerProbeRoutes(app, { logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness, closing });
  registerFeatureRoutes(app, deps);
  return app;
}
