// Limits of the HTTP server itself, set deliberately rather than left at Node's defaults:
// - a request (head and body) must arrive within HTTP_REQUEST_TIMEOUT_MS, checked every second
//   (Node checks every 30 s by default), so slow clients cannot hold sockets open;
// - idle keep-alive sockets close after HTTP_KEEP_ALIVE_TIMEOUT_MS, which must stay above the load
//   balancer's own idle timeout, or it will reuse sockets we are closing;
// - no socket inactivity timeout beyond those two: server-sent event streams stay open by design
//   (they ping every 15 s), and every handler is bounded by its Redis and database timeouts;
// - a request head of at most HTTP_MAX_HEADER_BYTES (a bearer token, a claim token and an
//   Idempotency-Key need well under 1 KiB); the body limit is app.ts' BODY_LIMIT_BYTES.
// Errors Node raises before Fastify sees a request are answered in the contract's shape too.
import { type Server, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions } from 'fastify';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { SECURITY_HEADERS } from './security-headers.js';

export interface HttpLimits {
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxHeaderBytes: number;
  /** Proxies whose X-Forwarded-For names the client (none: the socket address is the client). */
  trustedProxies: string[];
  /** After close() starts, how long requests are still served (with Connection: close): graceful-close.ts. */
  shutdownGraceMs: number;
}

export const httpLimits = (config: Config): HttpLimits => ({
  requestTimeoutMs: config.httpRequestTimeoutMs,
  keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs,
  maxHeaderBytes: config.httpMaxHeaderBytes,
  trustedProxies: config.trustedProxies,
  shutdownGraceMs: config.shutdownGraceMs,
});

const TIMEOUT_CHECK_MS = 1_000;
/** The answers Node gets before Fastify carry the security headers of every other answer. */
const RAW_SECURITY_HEADERS = Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('');

function clientErrorAnswer(err: Error & { code?: string }, maxHeaderBytes: number): AppError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError('REQUEST_TIMEOUT', 'the request did not arrive in time');
  if (err.code === 'HPE_HEADER_OVERFLOW') return new AppError('HEADERS_TOO_LARGE', `request headers exceed ${maxHeaderBytes} bytes`);
  return new AppError('INVALID_REQUEST', 'malformed HTTP request');
}

export function serverOptions(limits: HttpLimits): FastifyHttpOptions<Server> {
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: 0,
    // Our own 503 while closing, in the contract's shape (graceful-close.ts).
    return503OnClosing: false,
    trustProxy: limits.trustedProxies.length ? limits.trustedProxies : false,
    http: {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    },
    clientErrorHandler(err: Error & { code?: string }, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const answer = clientErrorAnswer(err, limits.maxHeaderBytes);
      const body = JSON.stringify(answer.toBody());
      if (socket.writable) {
        socket.write(
          `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nContent-Type: application/json\r\n${RAW_SECURITY_HEADERS}` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy(err);
    },
  };
}
