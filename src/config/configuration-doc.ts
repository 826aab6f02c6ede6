// docs/configuration.md, made from the settings table so that the two cannot drift apart.
import { settings } from '../config.js';

/** The command that writes docs/configuration.md (test/docs/configuration-doc.test.ts keeps it current). */
export const CONFIGURATION_DOC_COMMAND = 'node --import tsx scripts/configuration-doc.ts > docs/configuration.md';

/** One table cell: "|" would split the row, and "<" would open an HTML tag on a rendered page. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/</g, '&lt;');

/** docs/configuration.md, made from the settings themselves (also `seckill config --markdown`). */
export function configurationDoc(): string {
  const rows = Object.values(settings).map((s) => `| \`${s.env}\` | ${s.default === '' ? 'empty' : `\`${cell(s.default)}\``} | ${cell(s.doc)} |`);
  return `> Generated from \`src/config.ts\` by \`${CONFIGURATION_DOC_COMMAND}\`: change a setting there, then run that command.

# Configuration

Every setting is an environment variable, read once at start-up by \`src/config.ts\` (nothing else
reads \`process.env\`). An unset or empty variable takes the default; where the default is empty,
the meaning says what empty does. An invalid value stops start-up with one line naming the
variable (exit code 2). \`seckill config\` prints the configuration a process would run with (the
JWT secret and the password of every URL redacted).

Where a setting decides what a guarantee is worth (\`ADMIT_DURABILITY\`, \`SHARDS\`, the token
buckets, \`SHUTDOWN_GRACE_MS\`), [operations.md](operations.md) says what was measured with it.

| variable | default | meaning |
| --- | --- | --- |
${rows.join('\n')}`;
}
