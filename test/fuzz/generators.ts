// fast-check arbitraries of requests, from the OpenAPI document's operations: a request valid
// for the operation (its parameters and body drawn from the document's schemas, ids from the
// live fixtures, the token its security asks for), then none, one or two mutations of it (a
// token, an id, the query, the body, a header, the method, the spelling of the path). What
// depends on the stores (which voucher, whose order, a claim token) is a choice the session
// resolves when it sends the request.
import fc from 'fast-check';
import type { JsonSchema, Operation } from './openapi.js';

/** An id of the fixtures (a voucher or an order: `pick` modulo how many there are), or a literal text. */
export type IdText = { pool: 'vouchers' | 'orders'; pick: number; percentEncoded?: boolean } | { literal: string };

export type TokenKind = 'expired' | 'wrongSecret' | 'badSubject' | 'noExpiry' | 'algNone' | 'future';
export type Auth =
  | { kind: 'none' }
  | { kind: 'user'; pick: number }
  /** The owner of the order in the path (the first user when there is none). */
  | { kind: 'owner' }
  | { kind: 'admin' }
  | { kind: 'forged'; token: TokenKind }
  | { kind: 'raw'; header: string };

/** A Claim-Token: issued to the caller for the voucher in the path, or wrong in one way. */
export type ClaimTokenChoice = 'mine' | 'otherUser' | 'otherVoucher' | 'expired';
export type HeaderValue = string | string[] | { claimToken: ClaimTokenChoice };
export type QueryValue = string | IdText;

export interface Plan {
  /** The operation's key ("GET /api/vouchers/{id}"). */
  op: string;
  method: string;
  params: Record<string, IdText>;
  query: [string, QueryValue][];
  auth: Auth;
  headers: [string, HeaderValue][];
  body?: { text: string; contentType?: string };
  /** A rewriting of the path as sent (spellings below), `plain` for none. */
  spelling: Spelling;
  /** What was changed from the valid request, for the report. */
  mutations: string[];
}

export const USERS = 3;

// ---------------------------------------------------------------- values from schemas

const CONTROL_OR_SURROGATE = /[\u0000-\u001F\u007F]|\p{Cs}/u;
const MAX_ID = 2n ** 63n - 1n;

const idValue = fc.oneof(fc.bigInt({ min: 1n, max: 1000n }), fc.bigInt({ min: 1n, max: MAX_ID })).map(String);

function stringOf(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'id') return idValue;
  if (schema.format === 'date-time') {
    const min = new Date(schema.formatMinimum ?? '1970-01-01T00:00:00Z');
    const max = new Date(schema.formatMaximum ?? '2100-01-01T00:00:00Z');
    return fc.date({ min, max, noInvalidDate: true }).map((d) => d.toISOString());
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, 40);
  return fc.string({ unit: 'binary', minLength, maxLength }).filter((s) => !CONTROL_OR_SURROGATE.test(s));
}

/** A value the schema accepts (the document's subset: objects, strings, integers, booleans, arrays, enums). */
export function valid(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map(valid));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'object': {
      const props = schema.properties ?? {};
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valid(s)])), { requiredKeys: schema.required ?? [] });
    }
    case 'string':
      return stringOf(schema);
    case 'integer': {
      const min = schema.minimum ?? -(2 ** 31);
      const max = schema.maximum ?? 2 ** 31;
      return fc.oneof(fc.integer({ min, max: Math.min(max, min + 5) }), fc.integer({ min, max }));
    }
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valid(schema.items ?? {}), { maxLength: Math.min(schema.maxItems ?? 5, 5) });
    default:
      return fc.constant(null);
  }
}

// ---------------------------------------------------------------- domain-valid bodies

const MINUTE = 60_000;
/** Sale windows around now: open, not started, ended. */
const window = fc.oneof(
  { weight: 3, arbitrary: fc.record({ begin: fc.integer({ min: -120, max: -1 }), end: fc.integer({ min: 60, max: 1440 }) }) },
  { weight: 1, arbitrary: fc.record({ begin: fc.integer({ min: 60, max: 600 }), end: fc.integer({ min: 601, max: 1440 }) }) },
  { weight: 1, arbitrary: fc.record({ begin: fc.integer({ min: -1440, max: -121 }), end: fc.integer({ min: -120, max: -1 }) }) },
);

/**
 * A voucher the API creates: a sale window near now, small stocks, payment timeouts of an hour at
 * least (orders stay payable through a run).
 */
const voucherBody = fc
  .record({
    title: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 30 }),
    kind: fc.constantFrom('seckill', 'limited', 'common'),
    stock: fc.integer({ min: 1, max: 50 }),
    window,
    perUserLimit: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    paymentTimeoutSeconds: fc.integer({ min: 3600, max: 86_400 }),
    waitlist: fc.option(fc.boolean(), { nil: undefined }),
    claimToken: fc.option(fc.boolean(), { nil: undefined }),
    segments: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  })
  .map(({ window: w, waitlist, segments, ...rest }) => {
    const now = Date.now();
    return {
      ...rest,
      beginAt: new Date(now + w.begin * MINUTE).toISOString(),
      endAt: new Date(now + w.end * MINUTE).toISOString(),
      ...(rest.kind === 'seckill' ? { waitlist, segments } : {}),
    };
  });

const claimBody = fc.option(fc.record({ quantity: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: [] }), { nil: undefined });

/** The body of a valid request, or undefined for none: the domain's own for the routes it knows, else the schema's. */
function validBody(op: Operation): fc.Arbitrary<unknown> {
  if (op.key === 'POST /api/vouchers') return fc.oneof({ weight: 4, arbitrary: voucherBody }, { weight: 1, arbitrary: valid(op.body!) });
  if (op.path.endsWith('/orders') && op.method === 'POST') return claimBody;
  return op.body ? valid(op.body) : fc.constant(undefined);
}

// ---------------------------------------------------------------- the valid request

const poolOf = (op: Operation, param: string): 'vouchers' | 'orders' => (op.path.startsWith('/api/orders/') && param === 'id' ? 'orders' : 'vouchers');
const pick = fc.nat({ max: 1000 });
const isAdminOp = (op: Operation) => /FORBIDDEN/.test(op.descriptions['403'] ?? '');
/** Few keys, so that retries (the same order) and reuses with another quantity (422) happen. */
const IDEMPOTENCY_KEYS = ['k1', 'k2', 'k3'];

function validAuth(op: Operation): fc.Arbitrary<Auth> {
  if (!op.secured) return fc.constant({ kind: 'none' });
  if (isAdminOp(op)) return fc.constant({ kind: 'admin' });
  if (op.path.startsWith('/api/orders/{id}')) {
    // An admin reads any order, acts on its own only.
    return op.method === 'GET' ? fc.constantFrom<Auth>({ kind: 'owner' }, { kind: 'owner' }, { kind: 'admin' }) : fc.constant({ kind: 'owner' });
  }
  return pick.map((p) => ({ kind: 'user', pick: p }));
}

function validQuery(op: Operation): fc.Arbitrary<[string, QueryValue][]> {
  const params = op.parameters.filter((p) => p.in === 'query');
  if (!params.length) return fc.constant([]);
  return fc
    .tuple(...params.map((p) => fc.option(p.name === 'voucherId' ? pick.map((n): QueryValue => ({ pool: 'vouchers', pick: n })) : (stringOf(p.schema) as fc.Arbitrary<QueryValue>), { nil: undefined })))
    .map((values) => params.flatMap((p, i): [string, QueryValue][] => (values[i] === undefined ? [] : [[p.name, values[i]]])));
}

function validHeaders(op: Operation): fc.Arbitrary<[string, HeaderValue][]> {
  const names = op.parameters.filter((p) => p.in === 'header').map((p) => p.name);
  const choices = names.map((name) =>
    fc.option(
      name === 'idempotency-key'
        ? fc.oneof(fc.constantFrom(...IDEMPOTENCY_KEYS), stringOf({ pattern: '^[A-Za-z0-9_-]{1,64}$' }))
        : name === 'claim-token'
          ? fc.constant<HeaderValue>({ claimToken: 'mine' })
          : stringOf(op.parameters.find((p) => p.name === name)!.schema),
      { nil: undefined, freq: 2 },
    ),
  );
  return fc.tuple(...choices).map((values) => names.flatMap((name, i): [string, HeaderValue][] => (values[i] === undefined ? [] : [[name, values[i]!]])));
}

function validPlan(op: Operation): fc.Arbitrary<Plan> {
  const params = op.parameters.filter((p) => p.in === 'path');
  return fc
    .record({
      ids: fc.tuple(...params.map(() => pick)),
      query: validQuery(op),
      auth: validAuth(op),
      headers: validHeaders(op),
      body: validBody(op),
    })
    .map(({ ids, query, auth, headers, body }) => ({
      op: op.key,
      method: op.method,
      params: Object.fromEntries(params.map((p, i) => [p.name, { pool: poolOf(op, p.name), pick: ids[i]! }])),
      query,
      auth,
      headers,
      ...(body === undefined ? {} : { body: { text: JSON.stringify(body), contentType: 'application/json' } }),
      spelling: 'plain' as Spelling,
      mutations: [],
    }));
}

// ---------------------------------------------------------------- mutations

/** Ids that are no voucher's or order's: unknown, out of range, malformed, encoded, overlong. */
const ODD_IDS = [
  '1', '9223372036854775807', '9223372036854775808', '18446744073709551616', '99999999999999999999', '0', '00', '01', '-1', '+1',
  '1.0', '1e3', '0x1f', 'abc', ' 1', '1 ', '١٢٣', 'null', 'true', '[]', '%00', '1%00', '%001', '%zz', '%', '%e0%a4%a', '%C0%AF',
  '%2F', '..', '.', '%2e%2e', 'é', '😀', '\ud800', '1;x', '1,2', '1'.repeat(101), 'a'.repeat(3000),
];

const oddId: fc.Arbitrary<IdText> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ODD_IDS).map((literal) => ({ literal })) },
  { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: MAX_ID }).map((n) => ({ literal: String(n) })) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map((literal) => ({ literal })) },
  { weight: 2, arbitrary: pick.map((n) => ({ pool: 'vouchers' as const, pick: n, percentEncoded: true })) },
  { weight: 1, arbitrary: pick.map((n) => ({ pool: 'orders' as const, pick: n })) },
);

const oddAuth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constant<Auth>({ kind: 'none' }),
  fc.constantFrom<TokenKind>('expired', 'wrongSecret', 'badSubject', 'noExpiry', 'algNone', 'future').map((token): Auth => ({ kind: 'forged', token })),
  fc.constantFrom('Bearer', 'Bearer ', 'Bearer x.y.z', 'Basic dXNlcjpwYXNz', 'bearer abc', 'Bearer a.b', 'Token abc', 'Bearer ' + 'A'.repeat(3000), 'Bearer ....').map((header): Auth => ({ kind: 'raw', header })),
  pick.map((p): Auth => ({ kind: 'user', pick: p })),
  fc.constant<Auth>({ kind: 'admin' }),
);

const ODD_VALUES = ['', ' ', '0', '-1', '201', '1e2', '1.5', 'abc', '%00', '%zz', '%E2%82%AC', 'null', '[]', '1,2', '9223372036854775808', 'a'.repeat(500)];
const oddQuery = (query: [string, QueryValue][]): fc.Arbitrary<[[string, QueryValue][], string]> =>
  fc.oneof(
    fc.tuple(fc.constantFrom('x', 'limit[a]', '__proto__', 'constructor', 'voucherId[]', '%00', 'é', 'LIMIT', 'a'.repeat(200)), fc.constantFrom(...ODD_VALUES)).map(([k, v]): [[string, QueryValue][], string] => [[...query, [k, v]], 'query: unknown key']),
    fc.tuple(fc.constantFrom('limit', 'voucherId'), fc.constantFrom(...ODD_VALUES)).map(([k, v]): [[string, QueryValue][], string] => [[...query, [k, v]], 'query: bad value']),
    fc.constantFrom('limit', 'voucherId').map((k): [[string, QueryValue][], string] => [[...query, [k, '1'], [k, '2']], 'query: repeated key']),
    fc.constant<[[string, QueryValue][], string]>([[...query, ['limit', '']], 'query: empty value']),
  );

/** JSON texts a schema would never accept in place of a value, written as they travel. */
const ODD_JSON = [
  'null', 'true', '0', '-0', '1.5', '1e308', '1e309', '-1e309', '9007199254740993', '9223372036854775808', '123456789012345678901234567890',
  '""', '"1"', '"\\u0000"', '"\\ud800"', '"\\udfff\\ud800"', '"a\\u0000b"', '"😀"', `"${'x'.repeat(300)}"`, '[]', '{}', '[1]', '{"a":1}',
  `${'['.repeat(500)}${']'.repeat(500)}`, `${'{"a":'.repeat(300)}1${'}'.repeat(300)}`,
];

/** A POST's body changed: wrong types, extra or missing fields, odd values, not JSON, another content type (most are refused, none may break anything). */
function oddBody(base: unknown): fc.Arbitrary<[{ text: string; contentType?: string } | undefined, string]> {
  const object = base !== null && typeof base === 'object' && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
  const keys = Object.keys(object);
  const withRaw = (key: string, raw: string) => {
    const marker = '\u0001MARK\u0001';
    return JSON.stringify({ ...object, [key]: marker }).replace(JSON.stringify(marker), raw);
  };
  const json = (text: string) => ({ text, contentType: 'application/json' });
  const arbs: fc.Arbitrary<[{ text: string; contentType?: string } | undefined, string]>[] = [
    fc.tuple(fc.constantFrom(...(keys.length ? keys : ['quantity'])), fc.constantFrom(...ODD_JSON)).map(([k, raw]) => [json(withRaw(k, raw)), `body: ${k} = ${raw.slice(0, 20)}`]),
    fc.tuple(fc.constantFrom('extra', '__proto__', 'constructor', 'id', ''), fc.constantFrom(...ODD_JSON)).map(([k, raw]) => [json(withRaw(k, raw)), `body: extra field ${k}`]),
    fc.constantFrom(...ODD_JSON).map((raw) => [json(raw), `body: root ${raw.slice(0, 20)}`]),
    fc.constantFrom('{', '{"a":}', "{'a':1}", '{"quantity":1}x', 'quantity=1', '\u0000', '{"a":1,"a":2}', '\ufeff{}', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}').map((text) => [json(text), 'body: not JSON / poisoned']),
    fc.constant([json(''), 'body: empty with a JSON content type']),
    fc.constant([json(JSON.stringify({ ...object, pad: 'x'.repeat(17 * 1024) })), 'body: over 16 KiB']),
    fc
      .tuple(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json', 'APPLICATION/JSON', 'application/json; charset=latin1', 'application/jsonx', ''), fc.constantFrom(JSON.stringify(object), 'a=1', '--x--'))
      .map(([contentType, text]) => [{ text, contentType }, `body: content-type ${contentType || '(none)'}`]),
  ];
  if (keys.length) arbs.push(fc.constantFrom(...keys).map((k) => [json(JSON.stringify(Object.fromEntries(Object.entries(object).filter(([key]) => key !== k)))), `body: without ${k}`]));
  else arbs.push(fc.constant([undefined, 'body: none']));
  return fc.oneof(...arbs);
}

const ODD_HEADER_VALUES = ['', ' ', 'a'.repeat(65), 'a b', 'é', 'ключ', '../x', '%00', 'k1,k2', '*', 'a'.repeat(300)];
const oddHeaders = (op: Operation, headers: [string, HeaderValue][]): fc.Arbitrary<[[string, HeaderValue][], string]> => {
  const names = op.parameters.filter((p) => p.in === 'header').map((p) => p.name);
  const without = (name: string) => headers.filter(([n]) => n !== name);
  const arbs: fc.Arbitrary<[[string, HeaderValue][], string]>[] = [
    fc.constantFrom('x-forwarded-for', 'content-encoding', 'accept', 'origin', 'x-http-method-override').map((n): [[string, HeaderValue][], string] => [[...headers, [n, n === 'content-encoding' ? 'gzip' : 'PUT']], `header: ${n}`]),
  ];
  for (const name of names) {
    arbs.push(fc.constantFrom(...ODD_HEADER_VALUES).map((v): [[string, HeaderValue][], string] => [[...without(name), [name, v]], `header: ${name} = ${v.slice(0, 20)}`]));
    arbs.push(fc.constant<[[string, HeaderValue][], string]>([[...without(name), [name, ['k1', 'k2']]], `header: ${name} repeated`]));
    if (name === 'claim-token') {
      arbs.push(fc.constantFrom<ClaimTokenChoice>('otherUser', 'otherVoucher', 'expired').map((c): [[string, HeaderValue][], string] => [[...without(name), [name, { claimToken: c }]], `header: claim token of ${c}`]));
      arbs.push(fc.constant<[[string, HeaderValue][], string]>([without(name), 'header: no claim token']));
    }
  }
  return fc.oneof(...arbs);
};

/** How the path is written: every spelling the router may or may not fold into a route. */
export type Spelling = 'plain' | 'encodedLetter' | 'doubleSlash' | 'trailingSlash' | 'upperCase' | 'dotSegment' | 'backslash' | 'semicolon' | 'encodedSlash';
const SPELLINGS: Spelling[] = ['encodedLetter', 'doubleSlash', 'trailingSlash', 'upperCase', 'dotSegment', 'backslash', 'semicolon', 'encodedSlash'];

/** The path written in `spelling`. */
export function spell(path: string, spelling: Spelling): string {
  switch (spelling) {
    case 'plain':
      return path;
    case 'encodedLetter':
      return path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`);
    case 'doubleSlash':
      return path.replace(/\/(?=[^/]*$)/, '//');
    case 'trailingSlash':
      return `${path}/`;
    case 'upperCase':
      return path.replace(/[a-z]+/, (s) => s.toUpperCase());
    case 'dotSegment':
      return path.replace(/^\/([^/]+)/, '/$1/./x/..');
    case 'backslash':
      return path.replace(/\/(?=[^/]*$)/, '\\');
    case 'semicolon':
      return `${path};v=1`;
    case 'encodedSlash':
      return path.replace(/\/(?=[^/]*$)/, '%2F');
  }
}

const OTHER_METHODS = ['PUT', 'DELETE', 'PATCH', 'OPTIONS'];

function mutate(op: Operation, plan: Plan, baseBody: unknown): fc.Arbitrary<Plan> {
  const params = Object.keys(plan.params);
  const add = (name: string) => [...plan.mutations, name];
  const arbs: fc.WeightedArbitrary<Plan>[] = [
    { weight: 3, arbitrary: oddAuth.map((auth) => ({ ...plan, auth, mutations: add(`auth: ${auth.kind === 'forged' ? auth.token : auth.kind}`) })) },
    { weight: 2, arbitrary: oddQuery(plan.query).map(([query, why]) => ({ ...plan, query, mutations: add(why) })) },
    { weight: 2, arbitrary: oddHeaders(op, plan.headers).map(([headers, why]) => ({ ...plan, headers, mutations: add(why) })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...OTHER_METHODS, op.method === 'GET' ? 'POST' : 'GET', ...(op.method === 'GET' ? ['HEAD', 'HEAD'] : [])).map((method) => ({ ...plan, method, mutations: add(`method ${method}`) })),
    },
    { weight: 1, arbitrary: fc.constantFrom(...SPELLINGS).map((spelling) => ({ ...plan, spelling, mutations: add(`path spelled ${spelling}`) })) },
  ];
  if (params.length) {
    const arbitrary = fc.tuple(fc.constantFrom(...params), oddId).map(([name, id]) => ({
      ...plan,
      params: { ...plan.params, [name]: id },
      mutations: add(`path ${name}: ${'literal' in id ? id.literal.slice(0, 24) : `${id.pool}${id.percentEncoded ? ' encoded' : ''}`}`),
    }));
    arbs.push({ weight: 3, arbitrary });
  }
  if (op.method === 'POST') arbs.push({ weight: 4, arbitrary: oddBody(baseBody).map(([body, why]) => ({ ...withoutBody(plan), ...(body ? { body } : {}), mutations: add(why) })) });
  else arbs.push({ weight: 1, arbitrary: fc.constant({ ...plan, body: { text: '{"a":', contentType: 'application/json' }, mutations: add('body on a GET') }) });
  return fc.oneof(...arbs);
}

function withoutBody(plan: Plan): Plan {
  const { body: _body, ...rest } = plan;
  return rest;
}

/** A request for `op`: valid, or valid but for one or two mutations. */
function requestFor(op: Operation): fc.Arbitrary<Plan> {
  return validPlan(op).chain((plan) => {
    const base = plan.body ? (JSON.parse(plan.body.text) as unknown) : {};
    return fc.oneof(
      { weight: 2, arbitrary: fc.constant(plan) },
      { weight: 3, arbitrary: mutate(op, plan, base) },
      { weight: 1, arbitrary: mutate(op, plan, base).chain((once) => mutate(op, once, base)) },
    );
  });
}

/**
 * How often an operation is drawn: the claim most, then the other writes, the buyer's reads, and
 * least the operators' reports and the YAML document (the slowest answers).
 */
function weightOf(op: Operation): number {
  if (op.key === 'POST /api/vouchers/{id}/orders') return 16;
  if (/\/(audit|stats|reconcile|live)$|^GET \/docs\/yaml$/.test(op.key)) return 1;
  if (op.method === 'POST') return 6;
  return op.path.startsWith('/api/') ? 4 : 2;
}

/** A request for any operation of the document. */
export const requests = (ops: Operation[]): fc.Arbitrary<Plan> => fc.oneof(...ops.map((op) => ({ weight: weightOf(op), arbitrary: requestFor(op) })));
