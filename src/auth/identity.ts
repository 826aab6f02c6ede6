// Who is calling: HS256 tokens signed with JWT_SECRET (tokens.ts) and, with JWT_JWKS_URL set, the
// shop's identity provider's tokens (jwks-tokens.ts). The header's `alg` picks the verifier, so an
// asymmetric token is never checked against the HMAC secret nor an HS256 token against a public
// key; `none` and any other algorithm are refused. HS256 and JWKS tokens verified before answer
// synchronously; only a JWKS token seen for the first time returns a promise.
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import { createJwksTokenVerifier } from './jwks-tokens.js';
import { createKeySet, isJwksAlgorithm } from './key-set.js';
import { invalid, jsonObject, type Principal, type TokenService } from './tokens.js';
import { VerifiedTokens } from './verified-tokens.js';

export interface Identity {
  /** The caller, or a throw/rejection UNAUTHORIZED; a promise only when a JWKS token is new. */
  authenticate(authorization: string | undefined): Principal | Promise<Principal>;
  /** Settles when the JWKS was fetched at start (or failed to be: logged, fetched on demand). */
  readonly ready: Promise<void>;
  /** Stops the JWKS refresh and any fetch in flight. */
  close(): void;
}

export interface IdentityOptions {
  tokens: TokenService;
  log: Logger;
  /** JWT_JWKS_URL, JWT_ISSUER, JWT_AUDIENCE, JWT_USER_CLAIM, JWT_ROLES_CLAIM, JWT_MAX_TTL_SECONDS. */
  config: { jwtJwksUrl: string; jwtIssuer: string; jwtAudience: string; jwtUserClaim: string; jwtRolesClaim: string; jwtMaxTtlSeconds: number };
  /** Verified JWKS tokens kept at most. */
  capacity?: number;
}

const missing = () => new AppError('UNAUTHORIZED', 'missing bearer token');

export function createIdentity({ tokens, log, config, capacity }: IdentityOptions): Identity {
  if (!config.jwtJwksUrl) return { authenticate: (authorization) => tokens.verify(authorization), ready: Promise.resolve(), close() {} };
  const verified = new VerifiedTokens(capacity);
  const keys = createKeySet({ url: config.jwtJwksUrl, log, onKeysChanged: () => verified.clear() });
  const verifyJwks = createJwksTokenVerifier({
    keys,
    issuer: config.jwtIssuer,
    audience: config.jwtAudience,
    userClaim: config.jwtUserClaim,
    rolesClaim: config.jwtRolesClaim,
    maxTtlSeconds: config.jwtMaxTtlSeconds,
  });
  const pending = new Map<string, Promise<Principal>>();
  // The header segment of the last HS256 token seen: the same one again goes straight to HS256.
  let hs256Header = '';
  return {
    ready: keys.ready,
    close: () => keys.close(),
    authenticate(authorization) {
      if (!authorization?.startsWith('Bearer ')) throw missing();
      const token = authorization.slice(7).trim();
      const headerSegment = token.slice(0, Math.max(token.indexOf('.'), 0));
      if (headerSegment === hs256Header) return tokens.verify(authorization);
      const now = Date.now();
      const known = verified.get(token, now);
      if (known !== undefined) return known;
      const header = jsonObject(headerSegment);
      if (header?.alg === 'HS256') {
        hs256Header = headerSegment;
        return tokens.verify(authorization);
      }
      if (header === null || !isJwksAlgorithm(header.alg)) throw invalid();
      // A buyer's retries while its first request is being verified wait for that verification.
      let verifying = pending.get(token);
      if (verifying === undefined) {
        verifying = verifyJwks(token, { ...header, alg: header.alg })
          .then((principal) => {
            verified.add(token, principal, Date.now());
            return principal;
          })
          .finally(() => pending.delete(token));
        pending.set(token, verifying);
      }
      return verifying;
    },
  };
}
