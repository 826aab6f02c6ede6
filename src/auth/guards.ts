// onRequest hooks: authentication runs before body validation, so an anonymous caller gets 401,
// not a hint about the body.
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Principal, TokenService } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export interface Guards {
  user(request: FastifyRequest): Promise<void>;
  admin(request: FastifyRequest): Promise<void>;
}

export function createGuards(tokens: TokenService): Guards {
  return {
    async user(request) {
      request.principal = tokens.verify(request.headers.authorization);
    },
    async admin(request) {
      const principal = tokens.verify(request.headers.authorization);
      if (!principal.admin) throw new AppError('FORBIDDEN', 'admin role required');
      request.principal = principal;
    },
  };
}

/** The caller of a guarded route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'missing bearer token');
  return request.principal;
}
