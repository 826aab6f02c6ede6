// onRequest hooks: authentication runs before body validation, so an anonymous caller gets 401,
// not a hint about the body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Principal, TokenService } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

export interface Guards {
  user: Hook;
  admin: Hook;
  /** The shop's backend (role service) or an admin. */
  service: Hook;
}

/** Callback-style hooks: verification is synchronous, so no promise per request. */
export function createGuards(tokens: TokenService): Guards {
  return {
    user(request, _reply, done) {
      try {
        request.principal = tokens.verify(request.headers.authorization);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    admin(request, _reply, done) {
      try {
        const principal = tokens.verify(request.headers.authorization);
        if (!principal.admin) throw new AppError('FORBIDDEN', 'admin role required');
        request.principal = principal;
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    service(request, _reply, done) {
      try {
        const principal = tokens.verify(request.headers.authorization);
        if (!principal.admin && !principal.service) throw new AppError('FORBIDDEN', 'service or admin role required');
        request.principal = principal;
        done();
      } catch (err) {
        done(err as Error);
      }
    },
  };
}

/** The caller of a guarded route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'missing bearer token');
  return request.principal;
}
