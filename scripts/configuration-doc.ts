// Prints docs/configuration.md from the settings table of src/config.ts, so that the document
// cannot drift from the code: test/docs/configuration-doc.test.ts fails when the two differ.
import { settings } from '../src/config.js';

const COMMAND = 'node --import tsx scripts/configuration-doc.ts > docs/configuration.md';

/** One table cell: "|" would split the row, and "<" would open an HTML tag on a rendered page. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/</g, '&lt;');

const rows = Object.values(settings).map(
  (s) => `| \`${s.env}\` | ${s.default === '' ? 'empty' : `\`${cell(s.default)}\``} | ${cell(s.doc)} |`,
);

console.log(`> Generated from \`src/config.ts\` by \`${COMMAND}\`: change a setting there, then run that command.

# Configuration

Every setting is an environment variable, read once at start-up by \`src/config.ts\` (nothing else
reads \`process.env\`). An unset or empty variable takes the default; where the default is empty,
the meaning says what empty does. An invalid value stops start-up with one line naming the
variable (exit code 2). \`seckill config\` prints the configuration a process would run with (the
JWT secret redacted).

Where a setting decides what a guarantee is worth (\`ADMIT_DURABILITY\`, \`SHARDS\`, the token
buckets, \`SHUTDOWN_GRACE_MS\`), [operations.md](operations.md) says what was measured with it.

| variable | default | meaning |
| --- | --- | --- |
${rows.join('\n')}`);
