// Summarises a .cpuprofile written by `run.ts --profile` (V8 sampling profile of a server child's
// measured window): busy time by cost centre, then the top functions by self and inclusive time.
//   node --import tsx bench/admission/profile-summary.ts <file.cpuprofile> [--top 25]
// Samples are wall-clock: when a socket write wakes the load generator or Redis and the kernel
// lets it run on this core, the server's time off-CPU is charged to that write. The two "socket
// write" centres therefore overstate the server's own CPU on an oversubscribed machine.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A sample belongs to the first centre that matches a frame of its stack (leaf first). */
const CENTRES: [string, (f: CallFrame) => boolean][] = [
  ['GC', (f) => f.functionName === '(garbage collector)'],
  ['JWT verification (src/auth/tokens.ts, fast-jwt)', (f) => f.url.includes('/fast-jwt/') || f.url.endsWith('/src/auth/tokens.ts')],
  ['error reply (Fastify error handler)', (f) => f.url.includes('fastify/lib/error-handler')],
  ['reply: serialisation, headers', (f) => f.url.includes('fastify/lib/reply') && f.functionName === 'Reply.send'],
  ['ioredis: commands, pipelining, replies', (f) => f.url.includes('/ioredis/')],
  ['body parsing, validation', (f) => /content-type-parser|secure-json-parse|validation/.test(f.url)],
  ['logging (pino)', (f) => f.url.includes('/pino/')],
  ['metrics (prom-client)', (f) => f.url.includes('/prom-client/')],
  ['application code (src/)', (f) => /\/src\//.test(f.url) && !f.url.includes('node_modules')],
  ['Fastify: routing, hooks, request objects', (f) => /node_modules\/(fastify|find-my-way|@fastify|toad-cache)\//.test(f.url)],
];
const OTHER = 'Node core: HTTP parser, streams, promises, timers';
const SOCKET_WRITE = /^write(v|Utf8String|Buffer|Latin1String)$/;

function centreOf(stack: CallFrame[]): string {
  const leaf = stack[0]!;
  if (leaf.functionName === '(program)') return '(program): V8/native outside JS';
  if (SOCKET_WRITE.test(leaf.functionName)) {
    return stack.some((f) => f.url.includes('/ioredis/')) ? 'socket write syscall: to Redis' : 'socket write syscall: HTTP replies';
  }
  for (const [name, test] of CENTRES) if (stack.some(test)) return name;
  return OTHER;
}

function label(frame: CallFrame): string {
  const where = frame.url ? `${frame.url.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${frame.lineNumber + 1}` : '';
  return `${frame.functionName || '(anonymous)'} ${where}`.trim();
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
  const file = positionals[0];
  if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [--top N]');
  const top = Number(values.top);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Self time per node: each sample's delta goes to the node on top of the stack.
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const centres = new Map<string, number>();
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const stack: CallFrame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!.callFrame);
    if (stack[0]!.functionName === '(idle)') continue;
    busyUs += us;
    add(centres, centreOf(stack), us);
    add(self, label(stack[0]!), us);
    // Counted once per stack, so that recursion does not inflate it.
    for (const key of new Set(stack.map(label))) if (key !== '(root)') add(inclusive, key, us);
  }

  const print = (title: string, entries: Map<string, number>, n: number) => {
    console.log(`\n${title}`);
    [...entries]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .forEach(([k, us]) => console.log(`${((us / busyUs) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`));
  };
  const totalUs = profile.endTime - profile.startTime;
  console.log(file);
  console.log(`window ${(totalUs / 1e6).toFixed(2)} s, busy ${(busyUs / 1e6).toFixed(2)} s (${((busyUs / totalUs) * 100).toFixed(0)}%); percentages are of busy time`);
  print('busy time by cost centre', centres, Infinity);
  print('self time by function', self, top);
  print('inclusive time by function', inclusive, top);
}

main();
