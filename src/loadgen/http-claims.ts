// Claims over real HTTP for retrying buyers (buyers.ts): keep-alive connections to each origin
// (the API instances of a deployment), taken in turn claim after claim.
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';

export interface ClaimReply {
  status: number;
  body: string;
  headers: IncomingHttpHeaders;
}

export interface HttpClaimsOptions<U> {
  origins: string[];
  voucherId: string;
  /** The bearer token of `user`. */
  token(user: U): string | Promise<string>;
  /** Keep-alive connections to each origin. */
  connections: number;
  /** A claim with no complete answer by then fails (ms): its outcome is unknown. */
  timeoutMs?: number;
}

export interface HttpClaims<U> {
  /** One claim of a unit as `user`; rejects when no answer comes (reset, refused, timed out). */
  send(user: U, idempotencyKey: string): Promise<ClaimReply>;
  close(): Promise<void>;
}

export function httpClaims<U>({ origins, voucherId, token, connections, timeoutMs }: HttpClaimsOptions<U>): HttpClaims<U> {
  const timeouts = timeoutMs === undefined ? {} : { headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
  const pools = origins.map((origin) => new Pool(origin, { connections, pipelining: 1, ...timeouts }));
  let turn = 0;
  return {
    async send(user, idempotencyKey) {
      const pool = pools[turn++ % pools.length]!;
      const res = await pool.request({
        method: 'POST',
        path: `/api/vouchers/${voucherId}/orders`,
        headers: { authorization: `Bearer ${await token(user)}`, 'idempotency-key': idempotencyKey, 'content-type': 'application/json' },
        body: '{}',
        signal: timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs),
      });
      return { status: res.statusCode, body: await res.body.text(), headers: res.headers };
    },
    close: async () => void (await Promise.all(pools.map((pool) => pool.close()))),
  };
}
