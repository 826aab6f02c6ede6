// The fuzzer's side of the conversation: the fixtures a request draws its ids and tokens from,
// the request sent through app.inject, the checks of every answer against the contract and the
// OpenAPI document, and the stores compared around every request that was refused.
//
// Stores: a snapshot is the baseline; requests that cannot change anything (reads, and every
// answer that is not a success of a POST) pile up; before the next POST (and at the end),
// both stores are compared with the baseline, and a difference is narrowed down by sending the
// piled-up requests again one by one. A success of a POST, and the two refusals that change the
// stores by design (mayChange), may change them: the session waits until the pipeline stored
// what was admitted and takes a new baseline.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSigner } from 'fast-jwt';
import { ErrorCode } from '../../src/errors.js';
import { allShards } from '../../src/infra/redis/keys.js';
import { createVoucher, type TestApp } from '../support/helpers.js';
import type { Auth, ClaimTokenChoice, HeaderValue, IdText, Plan, QueryValue, TokenKind } from './generators.js';
import { spell, USERS } from './generators.js';
import { declaredAs, type Operation, operationsOf, type Target, targetOf } from './openapi.js';
import { differences, type Snapshot, snapshot } from './stores.js';

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  payload?: string;
  plan: Plan;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

const UPPER_SNAKE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;
const HOUR = 3_600_000;
const ADMIN = 1n;

export interface FuzzStats {
  requests: number;
  /** "GET /api/vouchers/{id}" (or `none`, `hidden`, `bad-url`) → status → answers. */
  answers: Map<string, Map<number, number>>;
  /** Requests after which the stores were compared (refused, or reads) and found unchanged. */
  checkedUnchanged: number;
  /** Successes of a POST (and the refusals that change the stores by design): allowed to change them. */
  changing: number;
  /** Requests mutated from a valid one. */
  mutated: number;
}

export class FuzzSession {
  private readonly t: TestApp;
  readonly ops: Operation[];
  readonly stats: FuzzStats = { requests: 0, answers: new Map(), checkedUnchanged: 0, changing: 0, mutated: 0 };
  private readonly vouchers: string[];
  private readonly orders: { id: string; user: bigint }[];
  private readonly users = Array.from({ length: USERS }, (_, i) => BigInt(11 + i));
  private readonly tokens: { users: string[]; admin: string; forged: Record<TokenKind, string> };
  private readonly seeded: Record<'vouchers' | 'orders', number>;
  private baseline: Snapshot;
  private pending: Sent[] = [];

  private constructor(
    t: TestApp,
    doc: Parameters<typeof operationsOf>[0],
    fixtures: { vouchers: string[]; orders: { id: string; user: bigint }[]; tokens: FuzzSession['tokens']; baseline: Snapshot },
  ) {
    this.t = t;
    this.ops = operationsOf(doc);
    this.vouchers = fixtures.vouchers;
    this.orders = fixtures.orders;
    this.tokens = fixtures.tokens;
    this.baseline = fixtures.baseline;
    this.seeded = { vouchers: this.vouchers.length, orders: this.orders.length };
  }

  /**
   * Fixtures: vouchers of every kind and state (open, small with a waitlist, not started, ended,
   * with claim tokens, with segments), orders of each user in each state, tokens of each kind.
   * The pipeline runs, so admitted orders are stored as in production.
   */
  static async start(t: TestApp): Promise<FuzzSession> {
    await t.c.startPipeline();
    const now = Date.now();
    const open = { beginAt: new Date(now - HOUR), endAt: new Date(now + 24 * HOUR), perUserLimit: 5, paymentTimeoutSeconds: 86_400 };
    const specs = [
      { ...open, kind: 'seckill' as const, stock: 1000 },
      { ...open, kind: 'seckill' as const, stock: 1, perUserLimit: 1, waitlist: true },
      { ...open, kind: 'seckill' as const, stock: 10, beginAt: new Date(now + HOUR), endAt: new Date(now + 2 * HOUR) },
      { ...open, kind: 'seckill' as const, stock: 10, beginAt: new Date(now - 2 * HOUR), endAt: new Date(now - HOUR) },
      { ...open, kind: 'limited' as const, stock: 1000 },
      { ...open, kind: 'common' as const, stock: 1000 },
      { ...open, kind: 'seckill' as const, stock: 100, claimToken: true },
      { ...open, kind: 'seckill' as const, stock: 100, segments: 2 },
    ];
    const vouchers: string[] = [];
    for (const spec of specs) vouchers.push((await createVoucher(t, spec)).id as string);
    const users = Array.from({ length: USERS }, (_, i) => BigInt(11 + i));
    // Valid for a day (JWT_MAX_TTL_SECONDS), so a long run keeps them.
    const sign = (userId: bigint, admin: boolean) => t.c.tokens.sign({ userId, admin }, 86_400);
    const tokens = { users: await Promise.all(users.map((u) => sign(u, false))), admin: await sign(ADMIN, true), forged: await forgedTokens(t) };
    // An order of each user on the open vouchers of each kind (one paid, one cancelled below);
    // the small voucher sold out to the first user, the others on its waitlist.
    const orders: { id: string; user: bigint }[] = [];
    const claim = (v: string, i: number) => t.app.inject({ method: 'POST', url: `/api/vouchers/${v}/orders`, headers: { authorization: `Bearer ${tokens.users[i]}` } });
    for (const [i, user] of users.entries()) {
      for (const v of [vouchers[0]!, vouchers[4]!, vouchers[5]!, ...(i === 0 ? [vouchers[1]!] : [])]) {
        const res = await claim(v, i);
        assert.ok(res.statusCode === 201 || res.statusCode === 202, res.body);
        orders.push({ id: res.json().orderId, user });
      }
    }
    for (const i of [1, 2]) {
      const waitlisted = await claim(vouchers[1]!, i);
      assert.equal(waitlisted.json().waitlisted, true, waitlisted.body);
    }
    const session = new FuzzSession(t, (await t.app.inject({ method: 'GET', url: '/docs/json' })).json(), { vouchers, orders, tokens, baseline: await snapshot(t.c) });
    await session.settle();
    for (const [action, order] of [['pay', orders[1]!], ['cancel', orders[2]!]] as const) {
      const res = await t.app.inject({ method: 'POST', url: `/api/orders/${order.id}/${action}`, headers: { authorization: `Bearer ${tokens.users[0]}` } });
      assert.equal(res.statusCode, 200, res.body);
    }
    await session.settle();
    return session;
  }

  /** Sends one request, checks its answer, and keeps the stores' account. */
  async send(plan: Plan): Promise<void> {
    const sent = this.resolve(plan);
    const target = targetOf(this.ops, sent.method, new URL(sent.url, 'http://localhost').pathname);
    const post = target.kind === 'operation' && target.op.method === 'POST';
    if (post) await this.checkUnchanged();
    const answer = await this.inject(sent);
    this.record(target, answer.status, plan);
    this.check(sent, target, answer);
    this.learn(sent, target, answer);
    if (post && this.mayChange(target.op, answer)) {
      this.stats.changing++;
      await this.settle();
    } else {
      this.pending.push(sent);
    }
  }

  /** The requests since the last comparison changed nothing. */
  async checkUnchanged(): Promise<void> {
    if (!this.pending.length) return;
    const now = await snapshot(this.t.c);
    const changed = differences(this.baseline, now);
    if (changed.length) {
      const culprit = await this.narrow(this.pending);
      assert.fail(
        `requests that were refused (or only read) changed the stores:\n  ${changed.join('\n  ')}\n` +
          `requests since the last comparison:\n${this.pending.map(describe).join('\n')}\n` +
          (culprit ? `sent again alone, this one changed them:\n${describe(culprit.sent)}\n  ${culprit.changed.join('\n  ')}` : 'sent again one by one, none changed them (a change of its own? a race?)'),
      );
    }
    this.stats.checkedUnchanged += this.pending.length;
    this.pending = [];
    this.baseline = now;
  }

  /** Sends `requests` again one at a time and returns the first that changes the stores. */
  private async narrow(requests: Sent[]): Promise<{ sent: Sent; changed: string[] } | null> {
    for (const sent of requests) {
      const before = await snapshot(this.t.c);
      await this.inject(sent);
      const changed = differences(before, await snapshot(this.t.c));
      if (changed.length) return { sent, changed };
    }
    return null;
  }

  /**
   * Waits until nothing is in flight, then takes the baseline. A success's own work is done when
   * it answers (a cancel gives the units back and admits the waitlist's head before it does),
   * but for the orders admitted in Redis, which the pipeline stores a moment later.
   */
  private async settle(): Promise<void> {
    const { redis, keys } = this.t.c;
    const inflight = allShards(keys).map((s) => keys.inflight(s));
    const deadline = Date.now() + 10_000;
    for (;;) {
      const held = await Promise.all(inflight.map((k) => redis.exists(k)));
      if (!held.some(Boolean)) {
        this.baseline = await snapshot(this.t.c);
        this.pending = [];
        return;
      }
      if (Date.now() > deadline) assert.fail('admitted orders still in flight after 10 s');
      await sleep(5);
    }
  }

  /** A success of a POST but the audit's; and the two refusals that change the stores by design. */
  private mayChange(op: Operation, answer: Answer): boolean {
    if (answer.status >= 200 && answer.status < 300) return !op.path.endsWith('/audit');
    if (answer.status !== 409) return false;
    // A sold-out claim on a voucher with a waitlist puts the buyer on it; a payment past the
    // deadline expires the order the payment timer has not swept yet, so the answer is final; a
    // payment the shop confirmed that cannot be applied is kept refund_due (its `reason` says why).
    return (
      /"waitlisted":true/.test(answer.body) ||
      (op.path.endsWith('/pay') && /"code":"ORDER_EXPIRED"/.test(answer.body)) ||
      (op.path.endsWith('/payments') && /"reason":/.test(answer.body))
    );
  }

  // ------------------------------------------------------------ building the request

  /** A fixture's id: three times in four one of those made at the start (every kind and state), else any. */
  private idText(id: IdText): string {
    if ('literal' in id) return id.literal;
    const pool: { id: string }[] | string[] = id.pool === 'vouchers' ? this.vouchers : this.orders;
    const of = id.pick % 4 ? Math.min(pool.length, this.seeded[id.pool]) : pool.length;
    const entry = pool[Math.floor(id.pick / 4) % of]!;
    const text = typeof entry === 'string' ? entry : entry.id;
    return id.percentEncoded ? [...text].map((ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`).join('') : text;
  }

  /** The caller: a user, an order's owner, or the admin (user 1). */
  private userOf(auth: Auth, orderId: string | undefined): bigint {
    if (auth.kind === 'user') return this.users[auth.pick % USERS]!;
    if (auth.kind === 'owner') return this.orders.find((o) => o.id === orderId)?.user ?? this.users[0]!;
    return auth.kind === 'admin' ? ADMIN : this.users[0]!;
  }

  private tokenOf(user: bigint): string {
    return user === ADMIN ? this.tokens.admin : this.tokens.users[this.users.indexOf(user)]!;
  }

  private authorization(auth: Auth, orderId: string | undefined): string | undefined {
    switch (auth.kind) {
      case 'none':
        return undefined;
      case 'forged':
        return `Bearer ${this.tokens.forged[auth.token]}`;
      case 'raw':
        return auth.header;
      default:
        return `Bearer ${this.tokenOf(this.userOf(auth, orderId))}`;
    }
  }

  private claimToken(choice: ClaimTokenChoice, voucherText: string, user: bigint): string {
    const voucher = /^[1-9][0-9]{0,18}$/.test(voucherText) ? BigInt(voucherText) : 1n;
    const issue = (v: bigint, u: bigint, inMs: number) => this.t.c.claimTokens.issue(v, u, new Date(Date.now() + inMs));
    if (choice === 'otherUser') return issue(voucher, user + 100n, 60_000);
    if (choice === 'otherVoucher') return issue(voucher + 1n, user, 60_000);
    if (choice === 'expired') return issue(voucher, user, -1_000);
    return issue(voucher, user, 60_000);
  }

  private resolve(plan: Plan): Sent {
    const op = this.ops.find((o) => o.key === plan.op)!;
    const params = Object.fromEntries(Object.entries(plan.params).map(([name, id]) => [name, this.idText(id)]));
    const path = spell(op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => params[name] ?? ''), plan.spelling);
    const queryValue = (v: QueryValue) => (typeof v === 'string' ? v : this.idText(v));
    const query = plan.query.map(([k, v]) => `${k}=${queryValue(v)}`).join('&');
    const orderId = 'id' in params && op.path.startsWith('/api/orders/') ? params.id : undefined;
    const user = this.userOf(plan.auth, orderId);
    const headers: Record<string, string | string[]> = {};
    const authorization = this.authorization(plan.auth, orderId);
    if (authorization !== undefined) headers.authorization = authorization;
    const headerValue = (v: HeaderValue) => (typeof v === 'object' && !Array.isArray(v) ? this.claimToken(v.claimToken, params.id ?? '', user) : v);
    for (const [name, value] of plan.headers) headers[name] = headerValue(value);
    if (plan.body?.contentType) headers['content-type'] = plan.body.contentType;
    return { method: plan.method, url: query ? `${path}?${query}` : path, headers, ...(plan.body ? { payload: plan.body.text } : {}), plan };
  }

  // ------------------------------------------------------------ sending and checking

  private async inject(sent: Sent): Promise<Answer> {
    this.stats.requests++;
    const res = await this.t.app.inject({
      method: sent.method as 'GET',
      url: sent.url,
      headers: sent.headers,
      ...(sent.payload === undefined ? {} : { payload: sent.payload }),
      payloadAsStream: true,
    });
    const stream = res.stream();
    const chunks: Buffer[] = [];
    if (res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream') && sent.method !== 'HEAD') {
      // A stream: its opening block, then the client leaves.
      chunks.push(await new Promise<Buffer>((resolve) => stream.once('data', resolve)));
      res.raw.res.destroy();
      await this.streamsClosed();
    } else {
      for await (const chunk of stream) chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') };
  }

  private async streamsClosed(): Promise<void> {
    const slots = this.t.c.appDeps.orders.streamSlots;
    for (let i = 0; slots.inUse() > 0; i++) {
      if (i > 200) assert.fail('an event stream kept its slot after its client left');
      await sleep(5);
    }
  }

  private record(target: Target, status: number, plan: Plan): void {
    const key = target.kind === 'operation' ? target.op.key : target.kind;
    const byStatus = this.stats.answers.get(key) ?? new Map<number, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    this.stats.answers.set(key, byStatus);
    if (plan.mutations.length) this.stats.mutated++;
  }

  /** The contract and the document, for one answer. */
  private check(sent: Sent, target: Target, answer: Answer): void {
    const { status } = answer;
    const where = () => `${describe(sent)}\n  → ${status} ${answer.headers['content-type'] ?? ''} ${answer.body.slice(0, 300)}`;
    assert.ok(status < 500, `a ${status} (never a 5xx with healthy servers):\n${where()}`);
    let code: string | undefined;
    if (status >= 400 && sent.method !== 'HEAD') {
      assert.match(String(answer.headers['content-type']), /^application\/json/, `an error answer that is not JSON:\n${where()}`);
      const body = JSON.parse(answer.body) as { code?: unknown; message?: unknown };
      code = String(body.code);
      assert.match(code, UPPER_SNAKE, `an error without an UPPER_SNAKE_CASE code:\n${where()}`);
      assert.ok(code in ErrorCode, `an error code that is not the contract's (src/errors.ts):\n${where()}`);
      assert.equal(typeof body.message, 'string', `an error without a message:\n${where()}`);
      const expected = ErrorCode[code as keyof typeof ErrorCode];
      assert.ok(expected === status || (status === 415 && code === 'INVALID_REQUEST'), `${code} answered with ${status}, not ${expected}:\n${where()}`);
    }
    if (status === 429 || status === 503) assert.match(String(answer.headers['retry-after']), /^[1-9][0-9]*$/, `a ${status} without Retry-After:\n${where()}`);
    switch (target.kind) {
      case 'operation': {
        const declared = declaredAs(target.op, status);
        assert.ok(declared, `${status} is not declared for ${target.op.key} in the OpenAPI document (it declares ${target.op.statuses.join(', ')}):\n${where()}`);
        const mediaType = String(answer.headers['content-type'] ?? '').split(';')[0]!;
        const types = target.op.content[declared] ?? [];
        if (answer.body && types.length) assert.ok(types.includes(mediaType), `${mediaType} is not the declared ${types.join(', ')} of ${status} on ${target.op.key}:\n${where()}`);
        break;
      }
      case 'bad-url':
        if (sent.method !== 'HEAD') assert.equal(code, 'INVALID_REQUEST', `a URL that is not valid percent-encoding:\n${where()}`);
        assert.equal(status, 400, `a URL that is not valid percent-encoding:\n${where()}`);
        break;
      case 'none':
        // The not-found handler reads a body like any route: a bad one is refused as such.
        if (sent.payload !== undefined && [400, 413, 415].includes(status)) break;
        assert.equal(status, 404, `no route matches, so 404 NOT_FOUND:\n${where()}`);
        if (sent.method !== 'HEAD') assert.equal(code, 'NOT_FOUND', `no route matches, so 404 NOT_FOUND:\n${where()}`);
        break;
      case 'hidden':
        break;
    }
  }

  /** New vouchers and orders become fixtures. */
  private learn(sent: Sent, target: Target, answer: Answer): void {
    if (target.kind !== 'operation' || answer.status < 200 || answer.status >= 300) return;
    if (target.op.key === 'POST /api/vouchers') this.vouchers.push(JSON.parse(answer.body).id);
    if (target.op.key === 'POST /api/vouchers/{id}/orders') {
      const user = this.userOf(sent.plan.auth, undefined);
      const { orderId } = JSON.parse(answer.body) as { orderId: string };
      if (!this.orders.some((o) => o.id === orderId)) this.orders.push({ id: orderId, user });
    }
  }
}

/** Tokens that must be refused: expired, another secret, a subject that is no user id, no expiry, alg none, not valid yet. */
async function forgedTokens(t: TestApp): Promise<Record<TokenKind, string>> {
  const now = Math.floor(Date.now() / 1000);
  const ours = createSigner({ key: t.env.JWT_SECRET!, algorithm: 'HS256' });
  const base64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return {
    expired: await t.c.tokens.sign({ userId: 11n, admin: true }, -60),
    wrongSecret: createSigner({ key: 'not-the-secret', algorithm: 'HS256' })({ sub: '11', role: 'admin', exp: now + 600 }),
    badSubject: ours({ sub: '0', role: 'admin', exp: now + 600 }),
    noExpiry: ours({ sub: '11', role: 'admin' }),
    algNone: `${base64({ alg: 'none', typ: 'JWT' })}.${base64({ sub: '11', role: 'admin', exp: now + 600 })}.`,
    future: ours({ sub: '11', role: 'admin', nbf: now + 3600, exp: now + 7200 }),
  };
}

/** A request as one can send it again: method, URL, headers (tokens shortened), body. */
function describe(sent: Sent): string {
  const headers = Object.entries(sent.headers).map(([k, v]) => `${k}: ${String(v).length > 80 ? `${String(v).slice(0, 77)}...` : String(v)}`);
  const body = sent.payload === undefined ? '' : `\n    body ${JSON.stringify(sent.payload.length > 300 ? `${sent.payload.slice(0, 300)}… (${sent.payload.length} bytes)` : sent.payload)}`;
  return `  ${sent.method} ${sent.url.length > 200 ? `${sent.url.slice(0, 200)}…` : sent.url}${headers.length ? `\n    ${headers.join('\n    ')}` : ''}${body}${sent.plan.mutations.length ? `\n    (mutated: ${sent.plan.mutations.join('; ')})` : ''}`;
}
