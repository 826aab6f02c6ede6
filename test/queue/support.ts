// What the queue tests share: queue vouchers, joins, standings and the public reads.
import type { TestApp } from '../support/helpers.js';
import { createVoucher } from '../support/helpers.js';

export async function createQueueVoucher(t: TestApp, spec: { opensAt: Date; beginAt: Date; endAt?: Date; stock?: number; [extra: string]: unknown }) {
  const { opensAt, beginAt, endAt = new Date(beginAt.getTime() + 3_600_000), ...rest } = spec;
  return createVoucher(t, { ...rest, beginAt, endAt, queue: { opensAt: opensAt.toISOString() } });
}

export async function join(t: TestApp, voucherId: string, user: number) {
  return t.app.inject({ method: 'POST', url: `/api/vouchers/${voucherId}/queue`, headers: { authorization: `Bearer ${await t.token(user)}` } });
}

export async function me(t: TestApp, voucherId: string, user: number) {
  return t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/queue/me`, headers: { authorization: `Bearer ${await t.token(user)}` } });
}

export async function summary(t: TestApp, voucherId: string): Promise<Record<string, any>> {
  return (await t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/queue` })).json();
}

/** A GET of the public API through the app, for readPublishedDraw. */
export const publicGet = (t: TestApp) => async (path: string) => {
  const res = await t.app.inject({ method: 'GET', url: path });
  if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${res.body}`);
  return res.json() as Record<string, unknown>;
};
