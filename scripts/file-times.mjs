// A node:test reporter that writes where a pass's time went: per test file, the wall time from its
// first reported event to its last, the sum of its top-level tests' durations, slowest first, and
// how many tests it reported (suites not counted), so two runs' counts can be compared file by file
// (a lower bound under --test-force-exit, which may drop a file's last reports: scripts/test.sh).
// scripts/test.sh adds it beside the usual output; the table lands in $TEST_TIMES_FILE, written
// synchronously after each file's top-level test: with --test-force-exit the process may end
// before the reporter's stream does.
import { writeFileSync } from 'node:fs';

export default async function* fileTimes(source) {
  const files = new Map();
  for await (const { type, data } of source) {
    if (!data?.file) continue;
    const now = performance.now();
    const f = files.get(data.file) ?? { first: now, last: now, tests: 0, count: 0 };
    f.last = now;
    if (type === 'test:pass' || type === 'test:fail') {
      if (data.nesting === 0) f.tests += data.details?.duration_ms ?? 0;
      if (data.details?.type !== 'suite') f.count += 1;
    }
    files.set(data.file, f);
    if (data.nesting === 0 && type !== 'test:enqueue' && type !== 'test:dequeue' && process.env.TEST_TIMES_FILE) writeFileSync(process.env.TEST_TIMES_FILE, tableOf(files));
  }
  if (!process.env.TEST_TIMES_FILE) yield tableOf(files);
}

function tableOf(files) {
  const rows = [...files].map(([file, f]) => ({ file: file.replace(`${process.cwd()}/`, ''), wall: (f.last - f.first) / 1000, tests: f.tests / 1000, count: f.count }));
  rows.sort((a, b) => b.tests - a.tests);
  return `${['tests_s\twall_s\tcount\tfile', ...rows.map((r) => `${r.tests.toFixed(1)}\t${r.wall.toFixed(1)}\t${r.count}\t${r.file}`)].join('\n')}\n`;
}
