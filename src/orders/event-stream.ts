// Server-sent events of a user's orders (GET /api/orders/events). Each open stream is one
// listener on OrderPubSub (Redis pub/sub, at most once), subscribed before the headers are
// written, so a failed subscription is an ordinary error answer; the SSE writer does the rest.
import type { OrderPubSub } from './order-pubsub.js';
import { createSseStreams, type SseFeed, type SseOptions, type SseStreams } from '../sse.js';

/** Open streams of order events, each of one user (the `open` argument). */
export type EventStreams = SseStreams<bigint>;

function orderEvents(pubsub: OrderPubSub, userId: bigint): SseFeed {
  const user = userId.toString();
  return {
    start: (send) =>
      pubsub.subscribeUser(user, (event) => {
        if (event.userId === user) send(event.type, event);
      }),
  };
}

export function createEventStreams(pubsub: OrderPubSub, options: SseOptions): EventStreams {
  return createSseStreams('order events', (userId: bigint) => orderEvents(pubsub, userId), options);
}
