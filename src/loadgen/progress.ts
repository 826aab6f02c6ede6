// The live progress line: requests, rate, orders handed out, units left, orders in flight. On a
// terminal it redraws one line in place; otherwise (CI, a pipe) it prints a line now and then.
import { int as fmt } from './format.js';
import { performance } from 'node:perf_hooks';

export interface ProgressSnapshot {
  answered: number;
  orders: number;
  /** Units still available (the voucher's `available`); undefined before the first poll. */
  available?: number;
  inFlight?: number;
  /** Why the last poll of the voucher failed, if it did. */
  failing?: string;
}

export interface ProgressGoal {
  /** Requests to send, when the run is bounded by a count … */
  requests?: number;
  /** … and/or seconds, when bounded by time. */
  seconds?: number;
}

const TTY_REDRAW_MS = 200;
const LOG_EVERY_MS = 5000;
const BAR_WIDTH = 20;

export class ProgressLine {
  private readonly out: NodeJS.WriteStream;
  private readonly label: string;
  private readonly goal: ProgressGoal;
  private readonly snapshot: () => ProgressSnapshot;
  private timer: NodeJS.Timeout | null = null;
  private readonly startedAt = performance.now();
  private readonly history: { at: number; answered: number }[] = [{ at: this.startedAt, answered: 0 }];

  constructor(out: NodeJS.WriteStream, label: string, goal: ProgressGoal, snapshot: () => ProgressSnapshot) {
    this.out = out;
    this.label = label;
    this.goal = goal;
    this.snapshot = snapshot;
  }

  /** `final`: the average rate over the run instead of the last second's. */
  private line(final = false): string {
    const now = performance.now();
    const s = this.snapshot();
    this.history.push({ at: now, answered: s.answered });
    while (this.history.length > 2 && now - this.history[1]!.at >= 1000) this.history.shift();
    const since = final ? { at: this.startedAt, answered: 0 } : this.history[0]!;
    const rate = now > since.at ? ((s.answered - since.answered) * 1000) / (now - since.at) : 0;
    const elapsed = (now - this.startedAt) / 1000;
    const done = Math.min(
      1,
      Math.max(this.goal.requests ? s.answered / this.goal.requests : 0, this.goal.seconds ? elapsed / this.goal.seconds : 0),
    );
    const filled = Math.round(done * BAR_WIDTH);
    const parts = [
      `${this.label} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${(done * 100).toFixed(0).padStart(3)}%`,
      `${elapsed.toFixed(1)} s`,
      `${fmt(s.answered)}${this.goal.requests ? `/${fmt(this.goal.requests)}` : ''} answered`,
      `${fmt(rate)} req/s${final ? ' on average' : ''}`,
      `${fmt(s.orders)} orders`,
      `${s.available === undefined ? '?' : fmt(s.available)} left`,
      `${s.inFlight === undefined ? '?' : fmt(s.inFlight)} in flight`,
    ];
    if (s.failing) parts.push(`stats: ${s.failing}`);
    return parts.join(' · ');
  }

  start(): void {
    const tty = this.out.isTTY;
    this.timer = setInterval(() => {
      if (tty) this.out.write(`\r\x1b[K${this.line()}`);
      else this.out.write(`${this.line()}\n`);
    }, tty ? TTY_REDRAW_MS : LOG_EVERY_MS);
    this.timer.unref();
  }

  /** Draws the final state and ends the line. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    this.out.write(`${this.out.isTTY ? '\r\x1b[K' : ''}${this.line(true)}\n`);
  }
}
