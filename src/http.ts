// Shared HTTP types and schema pieces.
import type {
  FastifyBaseLogger,
  FastifyInstance,
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

/**
 * Ajv formats of the API's schemas (app.ts). `id`: the pattern bounds the digits, the format the
 * value (at most 2^63 − 1, what both databases store), so an id out of range is a 400 like any
 * other bad input and never reaches a query.
 */
export const SCHEMA_FORMATS = { id: (text: string) => idText(text) !== null };

export const IdString = Type.String({
  pattern: ID_PATTERN,
  format: 'id',
  description: 'positive 64-bit integer (1 to 9223372036854775807) as a decimal string',
});
export const IdParams = Type.Object({ id: IdString });
export const ErrorBody = Type.Object(
  { code: Type.String(), message: Type.String() },
  { additionalProperties: true, description: 'every error: an UPPER_SNAKE_CASE code and a message' },
);
