// SQL literals for the statements built by hand (pipeline/bulk-sql.ts, orders/outbox.ts): each
// accepts only what it can write safely, so a statement made of them needs no parameters.
import { escape } from 'mysql2';

const UNSIGNED = /^[0-9]{1,20}$/;

/** An unsigned integer literal; anything else is refused. */
export function int(value: string | number | bigint): string {
  const text = String(value);
  if (!UNSIGNED.test(text)) throw new TypeError(`not an unsigned integer: ${text.slice(0, 40)}`);
  return text;
}

/** A text literal escaped by the driver's own function, or NULL. */
export const text = (value: string | null): string => (value === null ? 'NULL' : escape(value));
