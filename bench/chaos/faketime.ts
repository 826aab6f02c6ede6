// libfaketime from Debian's `faketime` package, installed when missing: a process started with it
// preloaded reads its wall clock from a file the campaign rewrites (FAKETIME_NO_CACHE), while its
// monotonic clock is left alone — what a wall clock stepped back by NTP or an operator looks like.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const exec = promisify(execFile);
/** The multi-threaded variant: Node's threads read the clock too. */
const LIBRARY = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

export async function ensureFaketime(): Promise<string> {
  if (existsSync(LIBRARY)) return LIBRARY;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await exec('apt-get', ['update', '-qq'], { env });
  await exec('apt-get', ['install', '-y', '-qq', 'faketime'], { env });
  if (!existsSync(LIBRARY)) throw new Error(`faketime installed, but ${LIBRARY} is not there`);
  return LIBRARY;
}
