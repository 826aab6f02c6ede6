// The history of a campaign cell: every claim a buyer sent, with what it was answered, and every
// later read of an order. One JSON object per line in `history.jsonl`, or the same objects in
// memory. The load driver records; the checker (checker.ts) judges. Nothing here imports the engine: the
// history is what a buyer saw, in the API's terms (ids are decimal strings, times are the driver's
// clock in ms since the epoch).
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';

/** ok: acknowledged (201/202 with an order id); fail: any other answer; unknown: no answer (timeout, reset). */
export type Outcome = 'ok' | 'fail' | 'unknown';

export interface ClaimOp {
  op: 'claim';
  /** The operation's own id, unique in the history. */
  id: string;
  /** Sent (ms). */
  at: number;
  voucherId: string;
  userId: string;
  quantity: number;
  idempotencyKey: string | null;
  outcome: Outcome;
  /** HTTP status, null when no answer came. */
  status: number | null;
  /** Error code of a refusal (`SOLD_OUT`, `UNAVAILABLE`, ...), else null. */
  code: string | null;
  orderId: string | null;
  /** A SOLD_OUT that put the buyer on the waitlist: a later promotion may store an order for it. */
  waitlisted?: boolean;
  /** Answered, or given up on (ms). */
  doneAt: number;
}

export interface ReadOp {
  op: 'read';
  at: number;
  orderId: string;
  userId: string;
  status: number | null;
  /** The order's status in the answer (`processing`, `pending_payment`, ...), null when none. */
  orderStatus: string | null;
  code: string | null;
}

export type HistoryOp = ClaimOp | ReadOp;
export type History = readonly HistoryOp[];

/** The statuses that acknowledge a claim: 202 (seckill, admitted) and 201 (limited/common, stored). */
const ACKNOWLEDGED = new Set([201, 202]);

/**
 * What an answer means for the buyer. An acknowledgement whose order id could not be read is no
 * answer the buyer can rely on, so it is unknown, like a timeout.
 */
export function outcomeOf(status: number | null, orderId: string | null): Outcome {
  if (status === null) return 'unknown';
  if (ACKNOWLEDGED.has(status)) return orderId === null ? 'unknown' : 'ok';
  return 'fail';
}

export type ClaimAnswer = Omit<ClaimOp, 'op' | 'outcome'>;
export type ReadAnswer = Omit<ReadOp, 'op'>;

export interface Recorder {
  /** Records a claim; its outcome follows from status and order id (outcomeOf). */
  recordClaim(claim: ClaimAnswer): ClaimOp;
  recordRead(read: ReadAnswer): ReadOp;
  /** Everything recorded so far, in recording order. */
  history(): History;
  /** Flushes and closes the file, if any; idempotent. */
  close(): Promise<void>;
}

/** A recorder that keeps the history in memory and, given a file, appends each operation to it as a line. */
export function createRecorder(file?: string): Recorder {
  const ops: HistoryOp[] = [];
  const out = file === undefined ? null : createWriteStream(file, { flags: 'w' });
  let closing: Promise<void> | null = null;
  const record = <T extends HistoryOp>(op: T): T => {
    if (closing) throw new Error('the recorder is closed');
    ops.push(op);
    out?.write(`${JSON.stringify(op)}\n`);
    return op;
  };
  return {
    recordClaim: (claim) => record({ op: 'claim', ...claim, outcome: outcomeOf(claim.status, claim.orderId) }),
    recordRead: (read) => record({ op: 'read', ...read }),
    history: () => ops,
    close: () =>
      (closing ??= out
        ? (async () => {
            out.end();
            await once(out, 'finish');
          })()
        : Promise.resolve()),
  };
}

/** A history written by a recorder (one JSON object per line; blank lines ignored). */
export function readHistory(file: string): History {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as HistoryOp);
}
