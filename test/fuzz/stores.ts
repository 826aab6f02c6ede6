// What both stores hold, to tell whether a request changed them: every table of the test's
// database (its row count and a checksum of its rows) and every Redis key of its prefix with its
// value.
// Left out, because a refusal may change them by design or they change on their own:
// - token buckets (`…:tb`, `…:tb:<user>`): a claim takes its token before any other check, so
//   a claim refused for its limit or as sold out has spent one;
// - Snowflake worker leases and high-water marks (`{w…}:lease`, `{w…}:hwm`): renewed on a timer,
//   and a refused claim may have drawn an order id;
// - the content of the order and dead-letter streams: the pipeline trims acknowledged entries on
//   its own timer; what a request could add shows in the stream's last id and its count of
//   entries ever added, which are kept.
import { sql } from 'kysely';
import type { Container } from '../../src/container.js';
import { dialectOf, POSTGRES } from '../../src/infra/db/dialect.js';
import { keysMatching } from '../../support/redis-keys.js';

export interface Snapshot {
  /** table → digest of its rows (with their count). */
  tables: Map<string, string>;
  /** key → its value, canonical. */
  keys: Map<string, string>;
}

const IGNORED_KEY = /:tb(:\d+)?$|:\{w\d+\}:(lease|hwm)$/;

/** The tables of the test's database, read once: migrations ran before the fuzzer starts. */
const tableNames = new WeakMap<Container, Promise<string[]>>();

/**
 * Each table's row count and a checksum of its rows, computed by the database in one statement
 * (two on MariaDB, side by side): PostgreSQL hashes the rows' text in order, MariaDB's CHECKSUM
 * TABLE sums a checksum of each row.
 */
async function tables(c: Container): Promise<Map<string, string>> {
  if (!tableNames.has(c)) tableNames.set(c, c.db.introspection.getTables().then((ts) => ts.map((t) => t.name).sort()));
  const names = await tableNames.get(c)!;
  if (dialectOf(c.db) === POSTGRES) {
    const digest = names.map((n) => `select '${n}' as name, count(*) as n, md5(coalesce(string_agg(r::text, E'\\n' order by r::text), '')) as sum from "${n}" r`);
    const { rows } = await sql.raw<{ name: string; n: string; sum: string }>(digest.join(' union all ')).execute(c.db);
    return new Map(rows.map((r) => [r.name, `${r.n} rows, md5 ${r.sum}`]));
  }
  const [counts, sums] = await Promise.all([
    sql.raw<Record<string, string>>(`select ${names.map((n) => `(select count(*) from \`${n}\`) as \`${n}\``).join(', ')}`).execute(c.db),
    sql.raw<{ Table: string; Checksum: string }>(`checksum table ${names.map((n) => `\`${n}\``).join(', ')}`).execute(c.db),
  ]);
  return new Map(sums.rows.map((r) => r.Table.split('.').pop()!).map((name, i) => [name, `${counts.rows[0]![name]} rows, checksum ${sums.rows[i]!.Checksum}`]));
}

async function keyNames(c: Container): Promise<string[]> {
  return (await keysMatching(c.redis, c.keys.pattern())).filter((k) => !IGNORED_KEY.test(k)).sort();
}

/** A key's value in a canonical form (fields sorted; a stream by its last id and additions). */
async function valueOf(c: Container, key: string): Promise<string> {
  const type = await c.redis.type(key);
  switch (type) {
    case 'string':
      return `string ${await c.redis.get(key)}`;
    case 'hash':
      return `hash ${JSON.stringify(Object.entries(await c.redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    case 'set':
      return `set ${JSON.stringify((await c.redis.smembers(key)).sort())}`;
    case 'zset':
      return `zset ${JSON.stringify(await c.redis.call('ZRANGE', key, '0', '-1', 'WITHSCORES'))}`;
    case 'list':
      return `list ${JSON.stringify(await c.redis.lrange(key, 0, -1))}`;
    case 'stream': {
      const info = (await c.redis.xinfo('STREAM', key)) as unknown[];
      const field = (name: string) => info[info.indexOf(name) + 1];
      return `stream last ${String(field('last-generated-id'))} added ${String(field('entries-added'))}`;
    }
    default:
      return type;
  }
}

export async function snapshot(c: Container): Promise<Snapshot> {
  const [tableDigests, names] = await Promise.all([tables(c), keyNames(c)]);
  const values = await Promise.all(names.map((k) => valueOf(c, k)));
  return { tables: tableDigests, keys: new Map(names.map((k, i) => [k, values[i]!])) };
}

/** What differs from `before` to `after`, one line per table or key; empty when nothing does. */
export function differences(before: Snapshot, after: Snapshot): string[] {
  const lines: string[] = [];
  const compare = (what: string, a: Map<string, string>, b: Map<string, string>) => {
    for (const name of new Set([...a.keys(), ...b.keys()])) {
      const [x, y] = [a.get(name), b.get(name)];
      if (x !== y) lines.push(`${what} ${name}: ${x ?? '(none)'} → ${y ?? '(none)'}`);
    }
  };
  compare('table', before.tables, after.tables);
  compare('key', before.keys, after.keys);
  return lines;
}
