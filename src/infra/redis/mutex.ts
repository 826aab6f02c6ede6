// redis-semaphore's Mutex with one change. Its refresh runs from a timer and does not catch: a
// refresh Redis refuses (READONLY while a replica is promoted, NOREPLICAS when a master lost its
// replicas, a command timeout) becomes an unhandled rejection, which ends the process. Here such a
// refresh is not thrown: the lock counts as held while its own timeout has not passed since the
// last refresh Redis took (no one else can take the key before it expires), and after that as lost,
// so onLockLost is told as when a refresh finds the key gone.
import { Mutex } from 'redis-semaphore';

export class RefreshSafeMutex extends Mutex {
  /** When the last acquire or refresh Redis took was sent: the key lives lockTimeout from then. */
  #sentAt = 0;

  protected override async _acquire(abortSignal?: AbortSignal): Promise<boolean> {
    const sentAt = Date.now();
    const acquired = await super._acquire(abortSignal);
    if (acquired) this.#sentAt = sentAt;
    return acquired;
  }

  protected override async _refresh(): Promise<boolean> {
    const sentAt = Date.now();
    try {
      const held = await super._refresh();
      if (held) this.#sentAt = sentAt;
      return held;
    } catch {
      return Date.now() - this.#sentAt < this._acquireOptions.lockTimeout;
    }
  }
}
