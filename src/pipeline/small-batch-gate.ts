// The lanes of a process share one turn for batches that are not full. Under a light load every
// lane's batch is small, and lanes storing small batches side by side pay a transaction's fixed
// cost (its statements, round trips and writes) once per lane for what one transaction could
// store: with 100 live vouchers spread over four lanes the server spent 1.6x the CPU per order of
// one hot voucher, whose orders one lane stores, and 1.07x with one lane (bench/many-sales). A
// small batch waits for the one before it and meanwhile its shards fill it up; a full batch (a
// backlog) never waits, so a backlog still drains on every lane at once.
export class SmallBatchGate {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` once the small batches before it are done. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(work);
    this.tail = turn.catch(() => undefined);
    return turn;
  }
}
