// The shop's identity provider, played on loopback: a JWKS served by node:http, keys made by jose,
// tokens signed with jose's SignJWT. It counts the fetches of its set and can answer 503.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { Scope } from '../support/helpers.js';

export type Alg = 'RS256' | 'ES256' | 'EdDSA';

export interface SigningKey {
  kid: string;
  alg: Alg;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  publicJwk: JWK;
}

export async function signingKey(alg: Alg, kid: string, jwkAlg: string | null = alg): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, use: 'sig', ...(jwkAlg === null ? {} : { alg: jwkAlg }) } };
}

export const ISSUER = 'https://id.shop.test/realms/shop';
export const AUDIENCE = 'seckill';

/** A token of `key`: by default for ISSUER and AUDIENCE, valid 10 minutes; `header` overrides the protected header. */
export function signToken(key: SigningKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 600, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

export interface JwksServer {
  url: string;
  /** GET requests of the set so far, and when the last one arrived (epoch ms). */
  fetches: number;
  lastFetchAt: number;
  /** The set served from now on. */
  publish(keys: SigningKey[]): void;
  /** Answer 503 while true. */
  down: boolean;
}

export async function startJwksServer(scope: Scope, keys: SigningKey[]): Promise<JwksServer> {
  let body = '';
  const state: JwksServer = {
    url: '',
    fetches: 0,
    lastFetchAt: 0,
    down: false,
    publish: (next) => void (body = JSON.stringify({ keys: next.map((k) => k.publicJwk) })),
  };
  state.publish(keys);
  const server = createServer((request, response) => {
    state.fetches++;
    state.lastFetchAt = Date.now();
    if (state.down || request.url !== '/jwks.json') return void response.writeHead(state.down ? 503 : 404).end();
    response.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  scope.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return state;
}
