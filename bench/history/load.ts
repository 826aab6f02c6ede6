// Bulk loading into the tables the migrations made, the fastest way each driver allows: MariaDB's
// LOAD DATA LOCAL INFILE and PostgreSQL's COPY FROM STDIN, both fed tab-separated text (\N for
// NULL) from a generator. A big table's secondary indexes are dropped for the load and built again
// afterwards from the server's own definitions of them, so the result has exactly the indexes
// the migrations made, built by a sort instead of row by row.
import { Readable } from 'node:stream';
import { createConnection, type Connection } from 'mysql2/promise';
import pg from 'pg';

/** Rows go in per statement of this many (each commits on its own). */
const ROWS_PER_STATEMENT = 500_000;

export interface Loader {
  readonly kind: 'mysql' | 'postgres';
  /** Loads `lines` (each "a\tb\t…\n") into `table`'s `columns`; returns the rows loaded. */
  load(table: string, columns: string[], lines: Iterable<string>): Promise<number>;
  /** Runs `fn` with `table`'s secondary indexes dropped, then builds them again. */
  withoutSecondaryIndexes<T>(table: string, fn: () => Promise<T>): Promise<T>;
  /** Refreshes the planner's statistics (and PostgreSQL's visibility map), as a year of autovacuum would have. */
  analyze(tables: string[]): Promise<void>;
  close(): Promise<void>;
}

/** Text of a time column: UTC, milliseconds. */
export const timeText = (ms: number | null): string => (ms === null ? '\\N' : new Date(ms).toISOString().replace('T', ' ').slice(0, 23));
export const nullable = (s: string | number | bigint | null): string => (s === null ? '\\N' : String(s));

/** Groups lines into chunks of about 64 KiB and statements of ROWS_PER_STATEMENT rows. */
function* statements(lines: Iterable<string>): Generator<Generator<string>> {
  const it = lines[Symbol.iterator]();
  let next = it.next();
  while (!next.done) {
    yield (function* chunk() {
      let rows = 0;
      let buf = '';
      while (!next.done && rows < ROWS_PER_STATEMENT) {
        buf += next.value;
        rows += 1;
        next = it.next();
        if (buf.length > 65_536) {
          yield buf;
          buf = '';
        }
      }
      if (buf) yield buf;
    })();
  }
}

const countRows = (chunks: Iterable<string>, counted: { rows: number }) =>
  (function* () {
    for (const c of chunks) {
      for (let i = c.indexOf('\n'); i >= 0; i = c.indexOf('\n', i + 1)) counted.rows += 1;
      yield Buffer.from(c);
    }
  })();

async function mysqlLoader(url: string): Promise<Loader> {
  const u = new URL(url);
  const conn: Connection = await createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    flags: ['+LOCAL_FILES'],
  });
  await conn.query("set time_zone = '+00:00', unique_checks = 0, foreign_key_checks = 0");
  return {
    kind: 'mysql',
    async load(table, columns, lines) {
      const counted = { rows: 0 };
      for (const chunks of statements(lines)) {
        await conn.query({
          sql: `load data local infile 'stdin' into table \`${table}\` character set utf8mb4 fields terminated by '\\t' escaped by '\\\\' lines terminated by '\\n' (${columns.map((c) => `\`${c}\``).join(', ')})`,
          infileStreamFactory: () => Readable.from(countRows(chunks, counted)),
        });
      }
      return counted.rows;
    },
    async withoutSecondaryIndexes(table, fn) {
      const [rows] = (await conn.query(`show create table \`${table}\``)) as unknown as [Record<string, string>[]];
      const ddl = rows[0]!['Create Table']!;
      const keys = ddl.split('\n').map((l) => l.trim().replace(/,$/, '')).filter((l) => /^(UNIQUE |FULLTEXT |SPATIAL )?KEY /.test(l));
      const name = (line: string) => /KEY (`[^`]+`)/.exec(line)![1]!;
      if (keys.length) await conn.query(`alter table \`${table}\` ${keys.map((k) => `drop index ${name(k)}`).join(', ')}`);
      const result = await fn();
      if (keys.length) await conn.query(`alter table \`${table}\` ${keys.map((k) => `add ${k}`).join(', ')}`);
      return result;
    },
    async analyze(tables) {
      await conn.query(`analyze table ${tables.map((t) => `\`${t}\``).join(', ')}`);
    },
    close: () => conn.end(),
  };
}

/** COPY … FROM STDIN as a pg "submittable": pg hands it the connection once the server asks for data. */
class CopyIn {
  private readonly text: string;
  private readonly chunks: Iterable<string>;
  private done!: (rows: number) => void;
  private failed!: (err: Error) => void;
  private rows = 0;
  private error: Error | null = null;
  readonly finished = new Promise<number>((resolve, reject) => {
    this.done = resolve;
    this.failed = reject;
  });

  constructor(text: string, chunks: Iterable<string>) {
    this.text = text;
    this.chunks = chunks;
  }

  submit(connection: pg.Connection & { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: pg.Connection & { stream: NodeJS.WritableStream & { writableNeedDrain: boolean }; sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void; sendCopyFail(m: string): void }): void {
    void (async () => {
      try {
        for (const chunk of this.chunks) {
          connection.sendCopyFromChunk(Buffer.from(chunk));
          if (connection.stream.writableNeedDrain) await new Promise((r) => connection.stream.once('drain', r));
        }
        connection.endCopyFrom();
      } catch (err) {
        connection.sendCopyFail((err as Error).message);
      }
    })();
  }

  handleCommandComplete(msg: { text: string }): void {
    this.rows = Number(/(\d+)$/.exec(msg.text)?.[1] ?? 0);
  }

  handleError(err: Error): void {
    this.error = err;
  }

  handleReadyForQuery(): void {
    if (this.error) this.failed(this.error);
    else this.done(this.rows);
  }
}

async function postgresLoader(url: string): Promise<Loader> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("set synchronous_commit = off; set timezone = 'UTC'");
  return {
    kind: 'postgres',
    async load(table, columns, lines) {
      let rows = 0;
      for (const chunks of statements(lines)) {
        const copy = new CopyIn(`copy "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) from stdin`, chunks);
        client.query(copy as never);
        rows += await copy.finished;
      }
      return rows;
    },
    async withoutSecondaryIndexes(table, fn) {
      // Indexes that back no constraint (a primary key or a unique constraint stays).
      const { rows } = await client.query<{ name: string; def: string }>(
        `select i.relname as name, pg_get_indexdef(ix.indexrelid) as def from pg_index ix join pg_class i on i.oid = ix.indexrelid
         where ix.indrelid = $1::regclass and not exists (select 1 from pg_constraint c where c.conindid = ix.indexrelid)`,
        [table],
      );
      for (const r of rows) await client.query(`drop index "${r.name}"`);
      const result = await fn();
      await client.query('set maintenance_work_mem = \'256MB\'');
      for (const r of rows) await client.query(r.def);
      return result;
    },
    async analyze(tables) {
      await client.query(`vacuum (analyze) ${tables.map((t) => `"${t}"`).join(', ')}`);
    },
    close: () => client.end(),
  };
}

export const createLoader = (url: string): Promise<Loader> => (/^postgres(ql)?:/.test(url) ? postgresLoader(url) : mysqlLoader(url));
