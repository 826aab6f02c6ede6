// SQL literals for the statements built by hand (pipeline/bulk-sql.ts, orders/event-outbox.ts): each
// accepts only what it can write safely, so a statement made of them needs no parameters.
import type { SqlDialect } from './dialect.js';

const UNSIGNED = /^[0-9]{1,20}$/;

/** An unsigned integer literal; anything else is refused. */
export function int(value: string | number | bigint): string {
  const text = String(value);
  if (!UNSIGNED.test(text)) throw new TypeError(`not an unsigned integer: ${text.slice(0, 40)}`);
  return text;
}

/** A text literal escaped the dialect's way, or NULL. */
export const text = (dialect: SqlDialect, value: string | null): string => (value === null ? 'NULL' : dialect.text(value));
