// A bench's server runs as a forked child and answers IPC messages by their `type`.
import type { ChildProcess } from 'node:child_process';

/** The child's next message of `type`; rejects when the child exits first. */
export function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== type) return;
      child.off('exit', onExit);
      child.off('message', onMessage);
      resolve(m as T);
    };
    const onExit = (code: number | null) => reject(new Error(`server exited (${code}) before ${type}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
