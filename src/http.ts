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

export const ErrorBody = Type.Object(
  { code: Type.String(), message: Type.String() },
  { additionalProperties: true, description: 'every error: an UPPER_SNAKE_CASE code and a message' },
);
