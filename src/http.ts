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
import { ID_PATTERN } from './id-text.js';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export const IdString = Type.String({ pattern: ID_PATTERN, description: 'positive 64-bit integer as a decimal string' });
export const IdParams = Type.Object({ id: IdString });
export const ErrorBody = Type.Object(
  { code: Type.String(), message: Type.String() },
  { additionalProperties: true, description: 'every error: an UPPER_SNAKE_CASE code and a message' },
);
