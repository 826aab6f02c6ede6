// A typed client of the API for a shop's backend: every path, body and answer typed from the
// OpenAPI document (schema.ts, generated), calls made by openapi-fetch. An answer is
// `{ data }` on 2xx and `{ error }` (the contract's `{code, message}`) otherwise.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { paths } from './schema.js';
export type SeckillClient = Client<paths>;

export interface SeckillClientOptions {
  /** The engine's address, e.g. https://sale.shop.example (no /api). */
  baseUrl: string;
  /** A bearer token: the shop's backend signs in with the `service` role (or `admin` to create vouchers). */
  token: string;
  /** Another fetch (tests, a proxy agent); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

export function createSeckillClient({ baseUrl, token, fetch }: SeckillClientOptions): SeckillClient {
  return createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` }, ...(fetch ? { fetch } : {}) });
}
