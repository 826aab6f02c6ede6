// What the SQL of the features needs that MariaDB/MySQL and PostgreSQL spell differently, as one
// table per database (in the manner of kysely's dialect adapters). Features ask `dialectOf(db)`
// for a fragment and never which database they talk to; the connection side lives in mysql.ts
// and postgres.ts, error classification in errors.ts.
import { escape } from 'mysql2';
import { type ColumnDefinitionBuilder, type CreateTableBuilder, type DeleteQueryBuilder, type Expression, type Kysely, PostgresAdapter, type RawBuilder, sql } from 'kysely';

/** Column types and table options of the migrations. */
export interface SchemaTypes {
  /** A 64-bit id or counter: BIGINT UNSIGNED on MySQL, BIGINT on PostgreSQL (ids are below 2^63, id-text.ts). */
  readonly u64: RawBuilder<unknown>;
  /** A 64-bit id the database assigns, increasing (the order events' ids). */
  readonly serialId: RawBuilder<unknown>;
  /** Marks the serial column (MySQL's AUTO_INCREMENT; PostgreSQL says it in the type). */
  serial(column: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /** A UTC instant with milliseconds. */
  readonly time: RawBuilder<unknown>;
  /** The default of a creation time: the statement's clock (as `now`), not the transaction's. */
  readonly nowDefault: RawBuilder<unknown>;
  /** A column of one of `values` (MySQL ENUM; a checked VARCHAR on PostgreSQL). */
  oneOf(column: string, values: readonly string[]): RawBuilder<unknown>;
  /** Table options (InnoDB on MySQL). */
  table<T extends string, C extends string>(builder: CreateTableBuilder<T, C>): CreateTableBuilder<T, C>;
  /** Drops an index (MySQL names its table; PostgreSQL's index names are the schema's own). */
  dropIndex(db: Kysely<unknown>, index: string, table: string): Promise<void>;
  /** Makes `table.column` follow every UPDATE of the row (MySQL says it in the column's default). */
  readonly touchedAtDefault: RawBuilder<unknown>;
  touchOnUpdate(db: Kysely<unknown>, table: string, column: string): Promise<void>;
  /**
   * How `table.column`, a nullable varchar(length), compares: `exact` (byte for byte, case
   * included) or by the table's `default` collation. MySQL's default collations ignore case;
   * PostgreSQL compares text exactly either way, so nothing changes there.
   */
  textComparison(db: Kysely<unknown>, table: string, column: string, length: number, comparison: 'exact' | 'default'): Promise<void>;
}

export interface ServerIdentity {
  /** Address, port and server id as the server itself reports them. */
  server: string;
  /** When it started (epoch ms, by its own clock). */
  startedMs: number;
}

export interface QuantityChange {
  voucherId: string;
  userId: string;
  quantity: number;
}

export interface SqlDialect {
  readonly name: 'mysql' | 'postgres';
  /**
   * The statement's clock. MySQL's NOW(3) is the time the statement began; PostgreSQL's now() is
   * the transaction's, so it says statement_timestamp().
   */
  readonly now: RawBuilder<Date>;
  /** The statement's clock plus `seconds` (negative: that long ago). */
  nowPlusSeconds(seconds: number): RawBuilder<Date>;
  /**
   * Which server answers and since when: another server, or the same one started again, may not
   * hold every commit the last one acknowledged (a failover to a standby that lagged).
   */
  serverIdentity(db: Kysely<any>): Promise<ServerIdentity>;
  /** Milliseconds from `from` to `to`, fractional (a numeric string or a number: read with Number()). */
  msBetween(from: Expression<Date | null>, to: Expression<Date | null>): RawBuilder<number | string | null>;
  /** A text literal for the statements built by hand (infra/db/literals.ts). */
  text(value: string): string;
  /** The clause after a multi-row INSERT INTO user_quantities that adds to a row already there. */
  readonly addQuantityOnConflict: string;
  /** The clause after a multi-row INSERT INTO `table` that adds `column` to the row of the same `key` already there. */
  addOnConflict(table: string, key: readonly string[], column: string): string;
  /** The clause after a multi-row INSERT that keeps a row of the same `key` already there. */
  keepOnConflict(key: readonly string[]): string;
  /**
   * A DELETE of `rows` rows the transaction holds locked, told to stop at the last. Without the
   * LIMIT, two event relays deleting neighbouring id ranges on MariaDB deadlocked under a drain's
   * load (bench/drain, two relays: 4 deadlocks in 2 rounds, each a round of events the broker had
   * confirmed sent again; none in 4 rounds with it). PostgreSQL has no DELETE … LIMIT, and no need.
   */
  limitDelete<DB, TB extends keyof DB, O>(query: DeleteQueryBuilder<DB, TB, O>, rows: number): DeleteQueryBuilder<DB, TB, O>;
  /** One UPDATE taking each `quantity` off its (voucher, user) row of user_quantities. */
  subtractQuantities(rows: readonly QuantityChange[]): RawBuilder<unknown>;
  readonly schema: SchemaTypes;
}

const mysqlAddOnConflict = (_table: string, _key: readonly string[], column: string) => `on duplicate key update ${column} = ${column} + values(${column})`;
const postgresAddOnConflict = (table: string, key: readonly string[], column: string) =>
  `on conflict (${key.join(', ')}) do update set ${column} = ${table}.${column} + excluded.${column}`;

export const MYSQL: SqlDialect = {
  name: 'mysql',
  now: sql<Date>`now(3)`,
  nowPlusSeconds: (seconds) => sql<Date>`now(3) + interval ${seconds} second`,
  async serverIdentity(db) {
    // Uptime is in SHOW STATUS on MariaDB and MySQL alike (information_schema has it on MariaDB only).
    const [{ rows: [server] }, { rows: [uptime] }] = await Promise.all([
      sql<{ server: string; now_s: string }>`select concat(@@hostname, ':', @@port, ':', @@server_id) as server, unix_timestamp(now(3)) as now_s`.execute(db),
      sql<{ Value: string }>`show global status like 'Uptime'`.execute(db),
    ]);
    return { server: server!.server, startedMs: Math.round((Number(server!.now_s) - Number(uptime!.Value)) * 1000) };
  },
  msBetween: (from, to) => sql`timestampdiff(microsecond, ${from}, ${to}) / 1000`,
  text: (value) => escape(value), // the driver's own function
  addQuantityOnConflict: mysqlAddOnConflict('user_quantities', ['voucher_id', 'user_id'], 'quantity'),
  addOnConflict: mysqlAddOnConflict,
  keepOnConflict: (key) => `on duplicate key update ${key[0]} = ${key[0]}`,
  limitDelete: (query, rows) => query.limit(rows),
  subtractQuantities: (rows) => {
    // Ids are cast: a BIGINT compared with a string would be compared as a double.
    const changes = sql.join(
      rows.map((r) => sql`select cast(${r.voucherId} as unsigned) as v, cast(${r.userId} as unsigned) as u, ${r.quantity} as q`),
      sql` union all `,
    );
    return sql`update user_quantities uq join (${changes}) d on uq.voucher_id = d.v and uq.user_id = d.u set uq.quantity = uq.quantity - d.q`;
  },
  schema: {
    u64: sql`bigint unsigned`,
    serialId: sql`bigint unsigned`,
    serial: (c) => c.autoIncrement(),
    time: sql`datetime(3)`,
    nowDefault: sql`current_timestamp(3)`,
    oneOf: (_column, values) => sql`enum(${sql.join(values.map((v) => sql.lit(v)))})`,
    table: (b) => b.modifyEnd(sql`engine=InnoDB`),
    dropIndex: async (db, index, table) => void (await db.schema.dropIndex(index).on(table).execute()),
    touchedAtDefault: sql`current_timestamp(3) on update current_timestamp(3)`,
    touchOnUpdate: async () => {},
    textComparison: async (db, table, column, length, comparison) => {
      const collation = comparison === 'exact' ? sql` character set utf8mb4 collate utf8mb4_bin` : sql``;
      await db.schema.alterTable(table).modifyColumn(column, sql`varchar(${sql.lit(length)})${collation}`).execute();
    },
  },
};

export const POSTGRES: SqlDialect = {
  name: 'postgres',
  now: sql<Date>`statement_timestamp()`,
  nowPlusSeconds: (seconds) => sql<Date>`statement_timestamp() + make_interval(secs => ${seconds})`,
  async serverIdentity(db) {
    const { rows: [row] } = await sql<{ server: string; started_ms: string }>`select coalesce(host(inet_server_addr()), 'local') || ':' || current_setting('port') as server,
      extract(epoch from pg_postmaster_start_time()) * 1000 as started_ms`.execute(db);
    return { server: row!.server, startedMs: Math.round(Number(row!.started_ms)) };
  },
  msBetween: (from, to) => sql`extract(epoch from (${to} - ${from})) * 1000`,
  // standard_conforming_strings (on since 9.1): only the quote is special. NUL cannot be stored.
  text: (value) => {
    if (value.includes('\0')) throw new TypeError('PostgreSQL text cannot hold NUL');
    return `'${value.replaceAll("'", "''")}'`;
  },
  addQuantityOnConflict: postgresAddOnConflict('user_quantities', ['voucher_id', 'user_id'], 'quantity'),
  addOnConflict: postgresAddOnConflict,
  keepOnConflict: (key) => `on conflict (${key.join(', ')}) do nothing`,
  limitDelete: (query) => query,
  subtractQuantities: (rows) => {
    const changes = sql.join(rows.map((r) => sql`(${r.voucherId}::bigint, ${r.userId}::bigint, ${r.quantity}::integer)`));
    return sql`update user_quantities uq set quantity = uq.quantity - d.q from (values ${changes}) as d(v, u, q) where uq.voucher_id = d.v and uq.user_id = d.u`;
  },
  schema: {
    u64: sql`bigint`,
    serialId: sql`bigint generated always as identity`,
    serial: (c) => c,
    time: sql`timestamptz(3)`,
    nowDefault: sql`statement_timestamp()`,
    oneOf: (column, values) => sql`varchar(20) check (${sql.ref(column)} in (${sql.join(values.map((v) => sql.lit(v)))}))`,
    table: (b) => b,
    dropIndex: async (db, index) => void (await db.schema.dropIndex(index).execute()),
    touchedAtDefault: sql`statement_timestamp()`,
    touchOnUpdate: async (db, table, column) => {
      const fn = sql.id(`${table}_touch_${column}`);
      await sql`create or replace function ${fn}() returns trigger language plpgsql as $$
        begin new.${sql.id(column)} := statement_timestamp(); return new; end $$`.execute(db);
      await sql`create trigger ${fn} before update on ${sql.table(table)} for each row execute function ${fn}()`.execute(db);
    },
    textComparison: async () => {},
  },
};

/** The table of the database `db` (or a transaction on it) talks to. */
export const dialectOf = (db: Kysely<any>): SqlDialect => (db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : MYSQL);
