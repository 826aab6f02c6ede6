// Shared HTTP types and schema pieces.
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifySchemaValidationError,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ID_PATTERN, idText } from './id-text.js';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

// Text a database would not keep as given: NUL (PostgreSQL cannot store it), an unpaired surrogate
// (UTF-8 has no encoding for one: both drivers store U+FFFD instead, while the answer and the
// directory's cache show the original); and the other C0 controls but tab and line breaks, which
// no title needs and many clients drop or choke on.
const UNSTORABLE_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]|\p{Cs}/u;

/**
 * The API's own ajv formats, each with what it asks of a value (the 400 says that, not the
 * format's name). `id`: IdString's pattern bounds the digits, the format the value (at most
 * 2^63 − 1, what both databases store), so an id out of range is a 400 like any other bad input
 * and never reaches a query.
 */
const FORMATS = {
  id: {
    check: (text: string) => idText(text) !== null,
    must: 'must be a positive 64-bit integer: decimal digits without a leading zero, 1 to 9223372036854775807',
  },
  text: {
    check: (text: string) => !UNSTORABLE_TEXT.test(text),
    must: 'must not contain NUL, control characters other than tab and line breaks, or unpaired surrogates',
  },
};

/** For ajv's `formats` option (app.ts). */
export const SCHEMA_FORMATS = Object.fromEntries(Object.entries(FORMATS).map(([name, format]) => [name, format.check]));

const FORMAT_LIMITS: Record<string, string> = { formatMinimum: 'at or after', formatMaximum: 'at or before' };

/** The words of the 400 for a value a schema refused (app.ts): what an id or a text must be, anything else in ajv's words. */
export function schemaErrorMessage(error: FastifySchemaValidationError | undefined): string {
  if (!error) return 'is invalid';
  const { keyword, params } = error;
  const format = keyword === 'format' ? params.format : keyword === 'pattern' && params.pattern === ID_PATTERN ? 'id' : undefined;
  const must = FORMATS[format as keyof typeof FORMATS]?.must;
  if (must) return must;
  if (keyword in FORMAT_LIMITS) return `must be ${FORMAT_LIMITS[keyword]} ${String(params.limit)}`;
  return error.message ?? 'is invalid';
}

export const IdString = Type.String({
  pattern: ID_PATTERN,
  format: 'id',
  description: 'positive 64-bit integer (1 to 9223372036854775807) as a decimal string',
});
export const IdParams = Type.Object({ id: IdString });

/** A string the API stores: refused (400) when it holds what a database would not keep as given. */
export const Text = (options: { minLength: number; maxLength: number }) =>
  Type.String({ ...options, format: 'text', description: 'no NUL, no control characters but tab and line breaks, no unpaired surrogates' });

/**
 * An instant both databases store as given: MariaDB's DATETIME holds years 1000 to 9999 (an offset
 * can carry a 4-digit year past 9999) and turns years below 100 into years of the 1900s or 2000s.
 */
export const DateTimeString = Type.String({
  format: 'date-time',
  formatMinimum: '1000-01-01T00:00:00Z',
  formatMaximum: '9999-12-31T23:59:59.999Z',
  description: 'ISO-8601 date-time from 1000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z',
});

/** A response of plain text in `mediaType` (HTML, YAML, the metrics' exposition format). */
export const textResponse = (mediaType: string, description: string) => ({ description, content: { [mediaType]: { schema: Type.String() } } });

export const ErrorBody = Type.Object(
  { code: Type.String(), message: Type.String() },
  { additionalProperties: true, description: 'every error: an UPPER_SNAKE_CASE code and a message' },
);

/** Every 429 and 503 says when to come back. */
const RETRY_AFTER = { 'retry-after': Type.Integer({ minimum: 1, description: 'seconds to wait before retrying' }) };

/** The statuses a route answers with an ErrorBody. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 503;

const BAD_INPUT = 'INVALID_REQUEST: a path id, query parameter, header or body that is not valid, or a body that is not JSON (the message names what)';

/** What a status means on every route that can answer it (a route may say more). */
export const ANSWER = {
  badInput: { 400: BAD_INPUT },
  /** Any POST: its body is read (and refused) whether or not the route takes one. */
  body: {
    400: BAD_INPUT,
    413: 'PAYLOAD_TOO_LARGE: the body exceeds 16 KiB',
    415: 'INVALID_REQUEST: the body has a content type the API does not read (it reads application/json, and text/plain as text)',
  },
  user: { 401: 'UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired)' },
  admin: {
    401: 'UNAUTHORIZED: no valid bearer token (missing, malformed, forged or expired)',
    403: 'FORBIDDEN: the bearer token has no admin role',
  },
  voucherNotFound: { 404: 'VOUCHER_NOT_FOUND: no voucher has this id' },
  orderNotFound: { 404: 'ORDER_NOT_FOUND: no order of yours has this id' },
  /** An event stream: its caps, and the per-address limit of every /api route. */
  streams: {
    429: 'TOO_MANY_STREAMS: you hold SSE_MAX_PER_USER open streams, or this server SSE_MAX_STREAMS; RATE_LIMITED: the per-address limit; see Retry-After',
  },
} satisfies Record<string, Partial<Record<ErrorStatus, string>>>;

/** A 503 can come from any route: graceful-close.ts answers it to every request once the server has closed. */
const UNAVAILABLE = 'UNAVAILABLE: Redis or the database unreachable or too slow, the server overloaded or shutting down; see Retry-After';

/**
 * A route's error answers, for its response schema and so for the OpenAPI document: an ErrorBody
 * per status, described by the codes it stands for there, with Retry-After on 429 and 503; a 503
 * on every route.
 */
export function errorAnswers<S extends ErrorStatus>(answers: Partial<Record<S, string>>): Record<S | 503, typeof ErrorBody> {
  const all: Partial<Record<ErrorStatus, string>> = { 503: UNAVAILABLE, ...answers };
  return Object.fromEntries(
    Object.entries(all).map(([status, description]) => [
      status,
      Type.Object(ErrorBody.properties, { additionalProperties: true, description, ...(status === '429' || status === '503' ? { headers: RETRY_AFTER } : {}) }),
    ]),
  ) as Record<S | 503, typeof ErrorBody>;
}

/** The per-address limit (IP_RATE_LIMIT) guards every /api route. */
const PER_ADDRESS = 'RATE_LIMITED: this address sent more than IP_RATE_LIMIT requests within IP_RATE_WINDOW_MS; see Retry-After';

/** errorAnswers of an /api route: a 429 of the per-address limit too. */
export const apiErrorAnswers = <S extends ErrorStatus>(answers: Partial<Record<S, string>>) =>
  errorAnswers<S | 429>({ 429: PER_ADDRESS, ...answers } as Partial<Record<S | 429, string>>);
