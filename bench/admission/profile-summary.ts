// Summarises a .cpuprofile written by `run.ts --profile` (V8 sampling profile of the server child
// during the measured window): where the server's CPU time goes, by area and by function.
//   node --import tsx bench/admission/profile-summary.ts <file.cpuprofile> [--top 25]
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

/** Coarse owner of a frame: our code, a package, Node internals, or a V8 pseudo-frame. */
function area(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node: ' + url.slice(5).split('/')[0];
  const local = /\/(src|bench)\/(.+)$/.exec(url);
  return local ? `${local[1]}/${local[2]}` : url;
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

  // Self time per node: each sample's delta is charged to the node that was on top of the stack.
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totalUs = profile.endTime - profile.startTime;
  const idleUs = [...byId.values()].filter((n) => n.callFrame.functionName === '(idle)').reduce((s, n) => s + (selfUs.get(n.id) ?? 0), 0);
  const busyUs = totalUs - idleUs;

  const selfByArea = new Map<string, number>();
  const selfByFunction = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    selfByArea.set(area(frame), (selfByArea.get(area(frame)) ?? 0) + us);
    selfByFunction.set(label(frame), (selfByFunction.get(label(frame)) ?? 0) + us);
  }

  // Inclusive time per function: self time of its subtree, counted once per stack (recursion).
  const inclusive = new Map<string, number>();
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n.id);
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parents.get(cur)) {
      const key = label(byId.get(cur)!.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }

  const pct = (us: number) => `${((us / busyUs) * 100).toFixed(1).padStart(5)}%`;
  const print = (title: string, entries: Map<string, number>, skip: (k: string) => boolean = () => false) => {
    console.log(`\n${title}`);
    [...entries.entries()]
      .filter(([k]) => !skip(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .forEach(([k, us]) => console.log(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`));
  };

  console.log(`${file}`);
  console.log(`window ${(totalUs / 1e6).toFixed(2)} s, busy ${(busyUs / 1e6).toFixed(2)} s (${((busyUs / totalUs) * 100).toFixed(0)}% of one core); percentages are of busy time`);
  print('self time by area', selfByArea, (k) => k === '(idle)');
  print('self time by function', selfByFunction, (k) => k.startsWith('(idle)'));
  print('inclusive time by function', inclusive, (k) => k.startsWith('(idle)') || k.startsWith('(root)'));
}

main();
