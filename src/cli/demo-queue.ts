// `seckill demo --queue`: a queued drop on this machine, end to end. The API and the workers run
// in this process (the demo's own database and key prefix); every buyer joins the pre-queue over
// HTTP before the start; at the start the draw admits the first places; a third of the admitted
// buyers cancel (their units go to the next places), the shop confirms the others' payments, until every unit is paid
// and the queue closes. The verdict: both stores audited (no oversell, nothing lost, no
// duplicates, admissions in queue order), the draw re-checked from what was published, and every
// place still waiting closed.
import { buildApp } from '../app.js';
import { createTokenService, ttlWithin } from '../auth/tokens.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { int } from '../loadgen/format.js';
import { mintCredentials } from '../loadgen/credentials.js';
import { JsonClient, type JsonResponse } from '../loadgen/http-client.js';
import { createLogger } from '../logger.js';
import { readPublishedDraw, verifyDraw } from '../queue/verify.js';
import { demoConfig, demoLinks } from './demo-setup.js';

const CONNECTIONS = 64;
const FIRST_BUYER = 2_000_001n;
/** The shop's backend (role service), which confirms payments. */
const SHOP_USER = 2n;
/** Pre-queue time per buyer (a generous rate on a busy 2-core box), and at least this long. */
const JOIN_MS_PER_BUYER = 1;
const MIN_PREQUEUE_MS = 5_000;
const CANCEL_EVERY = 3;

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | null | false | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`the demo timed out waiting for ${what}`);
    await wait(50);
  }
}

export async function demoQueue(baseConfig: Config, { stock, buyers }: { stock: number; buyers: number }): Promise<void> {
  const config = demoConfig(baseConfig);
  const container = await createContainer(config, createLogger(config.logLevel), { migrate: true });
  const app = await buildApp(container.appDeps);
  let client: JsonClient | null = null;
  try {
    await container.startWorkers();
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    client = new JsonClient(url, CONNECTIONS);
    const http = client;
    const credentials = await mintCredentials({ secret: config.jwtSecret, buyers, firstUserId: FIRST_BUYER, ttlSeconds: ttlWithin(3600, config.jwtMaxTtlSeconds) });
    const shop = `Bearer ${await createTokenService(config.jwtSecret).sign({ userId: SHOP_USER, admin: false, service: true }, ttlWithin(3600, config.jwtMaxTtlSeconds))}`;
    const call = (method: string, path: string, token?: string): Promise<JsonResponse> => http.request(method, path, token ? { headers: { authorization: token } } : {});

    const beginAt = new Date(Date.now() + Math.max(MIN_PREQUEUE_MS, buyers * JOIN_MS_PER_BUYER));
    const created = await http.request('POST', '/api/vouchers', {
      headers: { authorization: credentials.admin },
      body: {
        title: 'queued drop', kind: 'seckill', stock, paymentTimeoutSeconds: 600, queue: { opensAt: new Date().toISOString() },
        beginAt: beginAt.toISOString(), endAt: new Date(beginAt.getTime() + 3_600_000).toISOString(),
      },
    });
    if (created.status !== 201) throw new Error(`the queue voucher was not created: ${created.status} ${JSON.stringify(created.body)}`);
    const voucherId = String(created.body.id);
    console.log(`\nQueued drop: ${int(stock)} units for ${int(buyers)} buyers, the pre-queue open until ${beginAt.toISOString()}, at ${url}.\n${demoLinks(url, voucherId)}\n`);

    const joined = await joinAll((token) => call('POST', `/api/vouchers/${voucherId}/queue`, token), credentials.buyers);
    console.log(`joined: ${JSON.stringify(joined)}${Date.now() < beginAt.getTime() ? '' : ' (some after the start: placed after the drawn ones)'}`);
    const drawn = await until('the draw', async () => {
      const q = (await call('GET', `/api/vouchers/${voucherId}/queue`)).body;
      return q.seed ? q : null;
    }, beginAt.getTime() - Date.now() + 60_000);
    console.log(`drawn at ${String(drawn.drawnAt)} (${Date.parse(String(drawn.drawnAt)) - beginAt.getTime()} ms after the start): ${int(Number(drawn.drawAdmitted))} first places admitted`);

    // Pay or cancel each admitted order once it is stored, until every unit is paid.
    const settled = new Set<string>();
    let cancelled = 0;
    for (let round = 0; ; round++) {
      const stats = (await call('GET', `/api/vouchers/${voucherId}/stats`, credentials.admin)).body as { orders: Record<string, number> };
      if (stats.orders.paid === stock) break;
      const rows = await container.db.selectFrom('orders').select(['id', 'user_id']).where('voucher_id', '=', voucherId).where('status', '=', 'pending_payment').execute();
      for (const o of rows) {
        if (settled.has(o.id)) continue;
        settled.add(o.id);
        const token = credentials.buyers[Number(BigInt(o.user_id) - FIRST_BUYER)]!;
        const cancel = settled.size % CANCEL_EVERY === 0 && cancelled < buyers - stock;
        if (cancel) cancelled++;
        if (cancel) await call('POST', `/api/orders/${o.id}/cancel`, token);
        // The shop confirms the payment (PAYMENT_MODE=external); the voucher is free: amount 0.
        else await http.request('POST', `/api/orders/${o.id}/payments`, { headers: { authorization: shop }, body: { paymentId: `demo-${o.id}`, amount: 0, currency: config.defaultCurrency } });
      }
      if (round > 2_000) throw new Error('the units were not all paid');
      await wait(20);
    }
    const closed = await until('the queue closed', async () => {
      const q = (await call('GET', `/api/vouchers/${voucherId}/queue`)).body;
      return Number(q.closed) > 0 || Number(q.admitted) >= Number(q.entrants) + Number(q.appended) ? q : null;
    }, 10_000);
    console.log(`${int(cancelled)} cancelled, their units admitted to the next places; all ${int(stock)} paid; ${int(Number(closed.admitted))} places admitted, ${int(Number(closed.closed))} closed`);

    const audit = await container.audit(BigInt(voucherId), { drained: true });
    const draw = verifyDraw(await readPublishedDraw(async (path) => (await call('GET', path)).body, voucherId));
    for (const c of audit?.checks ?? []) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.id} ${c.name}${c.problems.length ? `: ${c.problems.join('; ')}` : ''}`);
    console.log(`${draw.ok ? 'ok  ' : 'FAIL'} the draw re-checked from what was published${draw.problems.length ? `: ${draw.problems.join('; ')}` : ''}`);
    const ok = Boolean(audit?.ok) && draw.ok;
    console.log(ok ? '\nPASS: every unit sold once, in the order of the draw, and the draw re-checks.\n' : '\nFAIL: see the checks above.\n');
    process.exitCode = ok ? 0 : 1;
  } finally {
    client?.close();
    await app.close();
    await container.close();
  }
}

/** Every buyer joins the pre-queue once, CONNECTIONS at a time; the answers counted by status. */
async function joinAll(join: (token: string) => Promise<JsonResponse>, tokens: string[]): Promise<Record<number, number>> {
  let next = 0;
  const joined: Record<number, number> = {};
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < tokens.length) {
        const res = await join(tokens[next++]!);
        joined[res.status] = (joined[res.status] ?? 0) + 1;
      }
    }),
  );
  return joined;
}
