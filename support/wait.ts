// The one way the tests and benches wait: poll a condition until it holds, with a deadline, never a fixed
// sleep standing in for "long enough".

export type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/**
 * Polls `check` every `intervalMs` until it returns a truthy value (returned), or fails after
 * `timeoutMs` naming `what` (a function when the message should show the state at the deadline).
 * An error thrown by `check` ends the wait with that error.
 */
export async function waitFor<T>(
  what: string | (() => string),
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
  intervalMs = 25,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
