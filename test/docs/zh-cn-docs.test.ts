// The Simplified Chinese pages (README.zh-CN.md, docs/zh-CN/) follow the English documents and
// point into the code: every file path, npm script, `seckill` command and option, setting, error
// code, metric, route, quoted test title and relative link they cite must exist, so a rename in
// the code fails here, naming the page and the name it lost. Reads files only: no server.
//
// What the pages may write, and how it is read:
// - a path starting with src/, test/, docs/, bench/, scripts/, ops/, support/ or examples/ is
//   relative to the repository root (in text, code or a link's target);
// - `npm run x` / `npm test`: a script of package.json;
// - `seckill x --flag` in backticks or a code block: a command registered in src/main.ts, and
//   options declared there;
// - an ALL_CAPS_WITH_UNDERSCORES name in backticks: a setting of src/config.ts, an error code of
//   src/errors.ts, or one of OTHER_NAMES (found in its file); a lone ALL-CAPS word in backticks:
//   an error code, one of OTHER_NAMES or a Redis / SQL word of COMMAND_WORDS;
// - `seckill_…` in backticks: a metric name found in src/;
// - a route (`… /api/…`) in backticks: one docs/api.md names;
// - 「title」: the title of a test, in the test file cited last before it on the same line;
// - [text](target): a relative link to a file that exists, and to a heading of it after `#`.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { settings } from '../../src/config.js';
import { ErrorCode } from '../../src/errors.js';
import { ROOT } from '../../support/processes.js';

const PAGES = [
  'README.zh-CN.md',
  'docs/zh-CN/claim-path.md',
  'docs/zh-CN/running.md',
  'docs/zh-CN/api.md',
  'docs/zh-CN/from-the-articles.md',
];

/** Names in backticks that are neither settings nor error codes, and the file each must appear in. */
const OTHER_NAMES: Record<string, string> = {
  DB_SOLD_OUT: 'src/pipeline/settlement.ts',
  DB_LIMIT_EXCEEDED: 'src/pipeline/settlement.ts',
  POISON: 'src/pipeline/settlement.ts',
  MISSING: 'src/infra/redis/lua/lib/codes.lua',
  DEMO_KEEP: 'scripts/demo.sh',
};

/** Redis commands, Redis errors and SQL words the pages name in backticks. */
const COMMAND_WORDS = new Set([
  'TIME', 'WAIT', 'XADD', 'XACK', 'XCLAIM', 'XAUTOCLAIM', 'XREADGROUP', 'INCR', 'INCRBY', 'HINCRBY', 'HGET',
  'ZADD', 'EVALSHA', 'WRONGTYPE', 'CROSSSLOT', 'NOGROUP', 'INSERT', 'UPDATE', 'SELECT',
]);

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith(suffix)).map((f) => join(dir, f));
}

const SETTINGS = new Set(Object.values(settings).map((s) => s.env));
const ERROR_CODES = new Set(Object.keys(ErrorCode));
const NPM_SCRIPTS = new Set(Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts));
const MAIN = read('src/main.ts');
const COMMANDS = new Set([...MAIN.matchAll(/command\('([\w-]+)'/g)].map((m) => m[1]!));
const SOURCES = filesUnder('src', '.ts').map(read).join('\n');
const API_DOC = read('docs/api.md');

const FENCED = /^```[^\n]*\n[\s\S]*?^```/gm;
/** Inline code spans, outside fenced blocks. */
const spans = (text: string) => [...text.replace(FENCED, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
/** The lines of fenced code blocks. */
const codeLines = (text: string) => [...text.matchAll(FENCED)].flatMap((m) => m[0].split('\n'));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of markdown.replace(FENCED, '').matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(heading!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** A test file's text with the quote escapes of its string literals undone, as titles read. */
const testText = (path: string) => read(path).replace(/\\(['"`])/g, '$1');

const PATH = /(?<![\w/.-])(?:\.\.\/)*((?:src|test|docs|bench|scripts|ops|support|examples)\/[A-Za-z0-9_./-]*)/g;
const TEST_FILE_OR_TITLE = /(test\/[A-Za-z0-9_./-]+\.test\.ts)|「([^」]+)」/g;

/** Everything the page cites that does not exist, one line each. */
interface Counts {
  paths: number;
  titles: number;
  names: number;
  links: number;
}

function problemsOf(page: string, text: string): { problems: string[]; counts: Counts } {
  const problems: string[] = [];
  const counts: Counts = { paths: 0, titles: 0, names: 0, links: 0 };
  const missing = (what: string) => problems.push(`${page}: ${what}`);

  for (const [, raw] of text.matchAll(PATH)) {
    const path = raw!.replace(/[./]+$/, '');
    counts.paths++;
    if (!existsSync(join(ROOT, path))) missing(`cites ${path}, which does not exist`);
  }

  for (const [, script] of text.matchAll(/\bnpm (?:run ([\w:-]+)|(test)\b)/g)) {
    const name = script ?? 'test';
    if (!NPM_SCRIPTS.has(name)) missing(`cites \`npm run ${name}\`, which is no script of package.json`);
  }

  const code = [...spans(text), ...codeLines(text)];
  for (const span of code) {
    const command = /(?:^|\s)seckill (?:-- )?([a-z][\w-]*)/.exec(span);
    if (command && !COMMANDS.has(command[1]!)) missing(`cites \`seckill ${command[1]}\`, which src/main.ts does not register`);
    if (command || /^npm run demo\b/.test(span)) {
      for (const [, flag] of span.matchAll(/(?<=\s)--([a-z][\w-]*)/g)) {
        if (flag !== 'help' && !MAIN.includes(`'--${flag}`)) missing(`cites the option --${flag} in \`${span}\`, which src/main.ts does not declare`);
      }
    }
  }

  for (const span of spans(text)) {
    for (const [name] of span.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)) {
      counts.names++;
      if (SETTINGS.has(name) || ERROR_CODES.has(name)) continue;
      const home = OTHER_NAMES[name];
      if (home) {
        if (!read(home).includes(name)) missing(`cites \`${name}\`, which ${home} no longer holds`);
      } else {
        missing(`cites \`${name}\`, which is neither a setting in src/config.ts nor an error code in src/errors.ts`);
      }
    }
    if (/^[A-Z][A-Z0-9]{2,}$/.test(span) && !ERROR_CODES.has(span) && !SETTINGS.has(span) && !COMMAND_WORDS.has(span)) {
      const home = OTHER_NAMES[span];
      if (!home) missing(`cites \`${span}\`, which is neither a setting in src/config.ts nor an error code in src/errors.ts`);
      else if (!read(home).includes(span)) missing(`cites \`${span}\`, which ${home} no longer holds`);
    }
    for (const [metric] of span.matchAll(/\bseckill_[a-z_]+/g)) {
      if (!SOURCES.includes(`'${metric}'`)) missing(`cites the metric ${metric}, which no module of src/ registers`);
    }
    for (const [route] of span.matchAll(/\/api\/[^\s`?]*/g)) {
      if (!API_DOC.includes(route)) missing(`cites the route ${route}, which docs/api.md does not name`);
    }
  }

  for (const line of text.split('\n')) {
    let file: string | null = null;
    for (const [, testFile, title] of line.matchAll(TEST_FILE_OR_TITLE)) {
      if (testFile) {
        file = testFile;
        continue;
      }
      counts.titles++;
      if (!file) missing(`quotes the test title 「${title}」 without its test file before it on the line`);
      else if (existsSync(join(ROOT, file)) && !testText(file).includes(title!)) missing(`quotes 「${title}」, which is no test title in ${file}`);
    }
  }

  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue;
    counts.links++;
    const [path, anchor] = target!.split('#') as [string, string | undefined];
    const file = path === '' ? join(ROOT, page) : resolve(ROOT, dirname(page), path);
    const shown = relative(ROOT, file);
    if (!existsSync(file)) {
      missing(`links to ${target}, but ${shown} does not exist`);
    } else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor))) {
      missing(`links to ${target}, but ${shown} has no heading #${anchor}`);
    }
  }
  return { problems: [...new Set(problems)], counts };
}

describe('the Simplified Chinese documents', () => {
  for (const page of PAGES) {
    it(`${page} cites only files, scripts, commands, settings, codes, metrics, routes, tests and links that exist`, () => {
      const text = read(page);
      assert.match(text, /以英文文档为准/, `${page}: must say at the top that the English documents are the reference`);
      const { problems } = problemsOf(page, text);
      assert.ok(problems.length === 0, `\n${problems.join('\n')}`);
    });
  }

  it('from-the-articles.md backs its claims with source files and quoted test titles', () => {
    const { counts } = problemsOf('docs/zh-CN/from-the-articles.md', read('docs/zh-CN/from-the-articles.md'));
    assert.ok(counts.titles >= 40, `only ${counts.titles} test titles quoted: is 「title」 still how they are written?`);
    assert.ok(counts.paths >= 60, `only ${counts.paths} paths cited`);
  });

  it('notices a missing file, script, command, option, name, title and link', () => {
    const page = 'docs/zh-CN/example.md';
    const text = [
      'See src/pipeline/no-such-file.ts and `npm run no-such-script`.',
      '`seckill no-such-command`, `seckill serve --no-such-option`, `NO_SUCH_SETTING`, `NOSUCHCODE`.',
      '`seckill_no_such_metric_total`, `GET /api/no-such-route`.',
      '`test/pipeline/pipeline.test.ts`：「no such test title」; 「a title without its file」.',
      '[a link](../no-such-page.md), [an anchor](../design.md#no-such-heading).',
    ].join('\n');
    const { problems } = problemsOf(page, text);
    const expected = [
      'src/pipeline/no-such-file.ts', 'npm run no-such-script', 'seckill no-such-command', '--no-such-option',
      'NO_SUCH_SETTING', 'NOSUCHCODE', 'seckill_no_such_metric_total', '/api/no-such-route', 'no such test title',
      'a title without its file', '../no-such-page.md', '#no-such-heading',
    ];
    for (const name of expected) assert.ok(problems.some((p) => p.startsWith(`${page}: `) && p.includes(name)), `not noticed: ${name}\n${problems.join('\n')}`);
    assert.equal(problems.length, expected.length, problems.join('\n'));
  });
});
