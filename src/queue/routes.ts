import { Type } from 'typebox';
import { type Guards, principalOf } from '../auth/guards.js';
import { ANSWER, apiErrorAnswers, type App, IdParams } from '../http.js';
import type { Queue } from './queue.js';
import type { QueueRepository } from './repository.js';

// A type list, not anyOf: the answer's serializer writes it without a check per value (anyOf
// costs every join an ajv call per field).
const NullableInteger = Type.Unsafe<number | null>({ type: ['integer', 'null'] });
const NullableString = Type.Unsafe<string | null>({ type: ['string', 'null'] });

const Standing = Type.Object({
  state: Type.Unsafe<'prequeue' | 'waiting' | 'admitted' | 'closed'>({ type: 'string', enum: ['prequeue', 'waiting', 'admitted', 'closed'] }),
  position: NullableInteger,
  ahead: NullableInteger,
  etaSeconds: NullableInteger,
  orderId: NullableString,
});

const Summary = Type.Object({
  commitment: Type.String({ description: 'sha256 of the seed (hex), published before anyone joins' }),
  seed: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'the seed (hex), published with the draw' }),
  drawnAt: NullableString,
  entrants: Type.Integer({ description: 'buyers in the pre-queue (the drawn ones, after the draw)' }),
  appended: Type.Integer({ description: 'buyers who joined after the start, placed after the drawn ones in arrival order' }),
  admitted: Type.Integer({ description: 'places admitted so far' }),
  drawAdmitted: Type.Integer({ description: 'places the draw admitted (the first ones)' }),
  closed: Type.Integer({ description: 'places still waiting when the queue closed (0 while open)' }),
});

const MAX_ENTRANTS_PAGE = 10_000;
const EntrantsQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ pattern: '^(?:0|[1-9][0-9]{0,8})$', description: 'the last place of the previous page (default 0)' })),
    limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$', description: `most entrants returned, 1..${MAX_ENTRANTS_PAGE} (default 1000)` })),
  },
  { additionalProperties: false },
);
const Entrants = Type.Object({
  entrants: Type.Array(Type.Object({ position: Type.Integer(), userId: Type.String() })),
});

export interface QueueRouteDeps {
  guards: Guards;
  queue: Queue;
  repository: Pick<QueueRepository, 'entrants'>;
}

export function registerQueueRoutes(app: App, { guards, queue, repository }: QueueRouteDeps) {
  app.post(
    '/api/vouchers/:id/queue',
    {
      onRequest: guards.user,
      schema: {
        tags: ['queue'],
        summary: "Join a queue voucher's queue (one place per buyer; joining again returns the same place)",
        description:
          'Before the start: the pre-queue, shuffled by the draw at beginAt (position null until then). ' +
          'After it: appended in arrival order. 409 NOT_STARTED before queue.opensAt, ENDED after endAt, SOLD_OUT once the queue closed.',
        params: IdParams,
        response: {
          202: Standing,
          ...apiErrorAnswers({ ...ANSWER.body, ...ANSWER.user, 404: 'VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly)', 409: 'NOT_STARTED: the queue opens later (opensAt); ENDED: the sale ended; SOLD_OUT: the queue is closed, no unit can come back' }),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await queue.join(BigInt(request.params.id), principalOf(request).userId)),
  );

  app.get(
    '/api/vouchers/:id/queue/me',
    {
      onRequest: guards.user,
      schema: {
        tags: ['queue'],
        summary: 'Your place in the queue (404 NOT_IN_QUEUE when you are not in it: join)',
        params: IdParams,
        response: {
          200: Standing,
          ...apiErrorAnswers({ ...ANSWER.badInput, ...ANSWER.user, 404: 'NOT_IN_QUEUE: you are not in this queue (never joined, or joined just before Redis lost its data: join again); VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue' }),
        },
      },
    },
    async (request) => queue.me(BigInt(request.params.id), principalOf(request).userId),
  );

  app.get(
    '/api/vouchers/:id/queue',
    {
      schema: {
        tags: ['queue'],
        summary: 'The queue as anyone sees it: the commitment, then the seed, and how many entered, were admitted and closed',
        security: [],
        params: IdParams,
        response: { 200: Summary, ...apiErrorAnswers({ ...ANSWER.badInput, 404: 'VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly)' }) },
      },
    },
    async (request) => queue.summary(BigInt(request.params.id)),
  );

  app.get(
    '/api/vouchers/:id/queue/entrants',
    {
      schema: {
        tags: ['queue'],
        summary: 'The drawn entrants by place, once the draw is published (empty before); page with ?after=<last place>',
        security: [],
        params: IdParams,
        querystring: EntrantsQuery,
        response: { 200: Entrants, ...apiErrorAnswers({ ...ANSWER.badInput, 404: 'VOUCHER_NOT_FOUND: no voucher has this id; QUEUE_NOT_OFFERED: the voucher has no queue (claim it directly)' }) },
      },
    },
    async (request) => {
      const v = await queue.voucher(BigInt(request.params.id));
      const limit = Math.min(MAX_ENTRANTS_PAGE, Number(request.query.limit ?? 1000));
      return { entrants: await repository.entrants(v.id, Number(request.query.after ?? 0), limit) };
    },
  );
}
