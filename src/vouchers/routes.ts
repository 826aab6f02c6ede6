import { Type } from 'typebox';
import type { Guards } from '../auth/guards.js';
import { AppError } from '../errors.js';
import { ANSWER, apiErrorAnswers, type App, DateTimeString, IdParams, Text } from '../http.js';
import type { VoucherDirectory } from './directory.js';
import type { CreateVoucherInput } from './create-voucher.js';
import type { VoucherRedisState } from './redis-state.js';
import type { VoucherRepository } from './repository.js';
import { type Voucher, voucherJson } from './voucher.js';
import { kindOf, VOUCHER_KIND_NAMES } from './kinds.js';
import { MAX_SEGMENTS } from './segments.js';
import { MAX_PRICE } from './voucher.js';

const CreateVoucherBody = Type.Object(
  {
    title: Text({ minLength: 1, maxLength: 200 }),
    kind: Type.Union(VOUCHER_KIND_NAMES.map((k) => Type.Literal(k))),
    stock: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
    beginAt: DateTimeString,
    endAt: DateTimeString,
    perUserLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
    paymentTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
    waitlist: Type.Optional(Type.Boolean()),
    claimToken: Type.Optional(Type.Boolean()),
    segments: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SEGMENTS })),
    queue: Type.Optional(Type.Object({ opensAt: DateTimeString }, { additionalProperties: false })),
    price: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PRICE, description: 'minor units of currency (cents), default 0' })),
    currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217, three capital letters; default DEFAULT_CURRENCY' })),
  },
  { additionalProperties: false },
);

const VoucherBody = Type.Object({
  id: Type.String(),
  title: Type.String(),
  kind: Type.String(),
  stock: Type.Integer(),
  available: Type.Integer(),
  beginAt: Type.String(),
  endAt: Type.String(),
  perUserLimit: Type.Integer(),
  paymentTimeoutSeconds: Type.Integer(),
  waitlist: Type.Boolean(),
  claimToken: Type.Boolean(),
  segments: Type.Integer(),
  queue: Type.Union([Type.Null(), Type.Object({ opensAt: Type.String() })]),
  price: Type.Integer(),
  currency: Type.String(),
});

export const DEFAULT_VOUCHER_LIST_LIMIT = 50;
export const MAX_VOUCHER_LIST_LIMIT = 200;
/** 1..200 as a decimal string: query values are strings and ajv does not coerce (coerceTypes false). */
const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9][0-9]?|1[0-9]{2}|200)$',
        description: `most vouchers returned, an integer 1..${MAX_VOUCHER_LIST_LIMIT} (default ${DEFAULT_VOUCHER_LIST_LIMIT})`,
      }),
    ),
  },
  { additionalProperties: false },
);

export interface VoucherRouteDeps {
  guards: Guards;
  directory: VoucherDirectory;
  redisState: VoucherRedisState;
  vouchers: VoucherRepository;
  createVoucher(input: CreateVoucherInput): Promise<Voucher>;
}

export function registerVoucherRoutes(app: App, { guards, directory, redisState, vouchers, createVoucher }: VoucherRouteDeps) {
  /** Live units left: Redis for Redis-gated vouchers (rebuilt if missing), the database otherwise. */
  async function available(v: Voucher): Promise<number> {
    if (!kindOf(v).redisGated) return (await vouchers.findById(v.id))?.stock ?? 0;
    let units = await redisState.available(v);
    if (units === null) {
      await redisState.rewarm(v);
      units = (await redisState.available(v)) ?? 0;
    }
    return units;
  }

  app.post(
    '/api/vouchers',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['vouchers'],
        summary: 'Create a voucher (admin); seckill vouchers are warmed into Redis',
        body: CreateVoucherBody,
        response: { 201: VoucherBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.body, ...ANSWER.admin }) },
      },
    },
    async (request, reply) => {
      const voucher = await createVoucher(request.body);
      return reply.code(201).send(voucherJson(voucher, voucher.stock));
    },
  );

  app.get(
    '/api/vouchers',
    {
      onRequest: guards.admin,
      schema: {
        tags: ['vouchers'],
        summary: 'List vouchers, newest first, with their live availability (admin)',
        description: 'Unknown query parameters are rejected.',
        querystring: ListQuery,
        response: { 200: Type.Object({ vouchers: Type.Array(VoucherBody) }), ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.admin }) },
      },
    },
    async (request) => {
      const list = await vouchers.listNewest(Number(request.query.limit ?? DEFAULT_VOUCHER_LIST_LIMIT));
      return { vouchers: await Promise.all(list.map(async (v) => voucherJson(v, await available(v)))) };
    },
  );

  app.get(
    '/api/vouchers/:id',
    {
      schema: {
        tags: ['vouchers'],
        summary: 'Read a voucher with its live availability',
        security: [],
        params: IdParams,
        response: { 200: VoucherBody, ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.voucherNotFound }) },
      },
    },
    async (request) => {
      const voucher = await directory.get(BigInt(request.params.id));
      if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${request.params.id} not found`);
      return voucherJson(voucher, await available(voucher));
    },
  );
}
