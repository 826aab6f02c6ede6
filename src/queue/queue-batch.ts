// Joins (and reads) of one voucher's queue that reach this process in the same turn of the event
// loop go to Redis in ONE queue-7.lua call, as claims share an admit call (claims/admission-batch.ts):
// at the opening, when many buyers join at once, one call instead of many saves most of the
// per-call cost on both sides. A join alone waits for nothing extra: its batch leaves in the turn
// it would have.
import { MAX_QUEUE_BATCH, type QueueAnswer, type QueueScripts, type QueueWindow } from '../infra/redis/scripts/queue.js';

export type QueueCall = (mode: 'join' | 'look', window: QueueWindow, userId: bigint) => Promise<QueueAnswer>;

interface Batch {
  mode: 'join' | 'look';
  window: QueueWindow;
  userIds: bigint[];
  waiting: { resolve(answer: QueueAnswer): void; reject(err: unknown): void }[];
}

export function batchQueueCalls(scripts: Pick<QueueScripts, 'queue'>): QueueCall {
  let pending = new Map<string, Batch>();

  const send = (batch: Batch, from: number) => {
    const waiting = batch.waiting.slice(from, from + MAX_QUEUE_BATCH);
    scripts.queue(batch.mode, batch.window, batch.userIds.slice(from, from + MAX_QUEUE_BATCH)).then(
      (answers) => waiting.forEach((w, i) => w.resolve(answers[i]!)),
      (err: unknown) => waiting.forEach((w) => w.reject(err)),
    );
  };

  const flush = () => {
    const due = pending;
    pending = new Map();
    for (const batch of due.values()) for (let i = 0; i < batch.waiting.length; i += MAX_QUEUE_BATCH) send(batch, i);
  };

  return (mode, window, userId) =>
    new Promise<QueueAnswer>((resolve, reject) => {
      if (pending.size === 0) setImmediate(flush); // after the I/O callbacks of this turn, which may bring more
      const key = `${mode}:${window.voucherId}`;
      let batch = pending.get(key);
      if (!batch) pending.set(key, (batch = { mode, window, userIds: [], waiting: [] }));
      batch.userIds.push(userId);
      batch.waiting.push({ resolve, reject });
    });
}
