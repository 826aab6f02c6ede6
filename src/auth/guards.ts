// onRequest hooks: authentication runs before body validation, so an anonymous caller gets 401,
// not a hint about the body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Identity } from './identity.js';
import type { Principal } from './tokens.js';

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

/** Why `principal` may not pass, or null. */
type Rule = (principal: Principal) => AppError | null;

function admit(request: FastifyRequest, principal: Principal, rule: Rule | null, done: (err?: Error) => void): void {
  const refusal = rule === null ? null : rule(principal);
  if (refusal !== null) return done(refusal);
  request.principal = principal;
  done();
}

/**
 * Callback-style hooks: a token verified before (and every HS256 token) completes synchronously,
 * so no promise per request; a JWKS token seen for the first time completes when it is verified.
 */
export function createGuards(identity: Pick<Identity, 'authenticate'>): Guards {
  const guard =
    (rule: Rule | null): Hook =>
    (request, _reply, done) => {
      let result: Principal | Promise<Principal>;
      try {
        result = identity.authenticate(request.headers.authorization);
      } catch (err) {
        return done(err as Error);
      }
      if (result instanceof Promise) result.then((principal) => admit(request, principal, rule, done), done);
      else admit(request, result, rule, done);
    };
  return {
    user: guard(null),
    admin: guard((p) => (p.admin ? null : new AppError('FORBIDDEN', 'admin role required'))),
    service: guard((p) => (p.admin || p.service ? null : new AppError('FORBIDDEN', 'service or admin role required'))),
  };
}

/** The caller of a guarded route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('UNAUTHORIZED', 'missing bearer token');
  return request.principal;
}
