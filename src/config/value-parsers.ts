// The parsers of setting values (config.ts): each takes the raw text of an environment variable
// and returns the typed value, or throws an Error saying what it expected.
import { isIP } from 'node:net';

export type Parser<T> = (raw: string) => T;

/** `raw` split at commas, each item trimmed, empty items dropped. */
const items = (raw: string) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

export const int = (min: number, max: number): Parser<number> => (raw) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`expected an integer in ${min}..${max}, got ${n}`);
  return n;
};

/** A share from 0 to 1 (a decimal). */
export const ratio: Parser<number> = (raw) => {
  const n = Number(raw.trim());
  if (!/^\s*(0|1|0?\.\d+|1\.0*)\s*$/.test(raw) || !(n >= 0 && n <= 1)) throw new Error(`expected a number from 0 to 1, got "${raw}"`);
  return n;
};

export const url = (...protocols: string[]): Parser<string> => (raw) => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error(`expected a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new Error(`expected a ${protocols.join(' or ')} URL, got "${parsed.protocol}"`);
  }
  return raw;
};

/** Comma-separated origins (scheme://host[:port]); empty: none. */
export const origins: Parser<string[]> = (raw) =>
  items(raw).map((item) => {
    let origin: string;
    try {
      origin = new URL(item).origin;
    } catch {
      throw new Error(`expected origins like https://shop.example.com, got "${item}"`);
    }
    if (origin === 'null' || origin !== item.replace(/\/$/, '')) throw new Error(`expected an origin (scheme://host[:port], no path), got "${item}"`);
    return origin;
  });

export const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw) => {
  if (!(values as string[]).includes(raw)) throw new Error(`expected one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
};

/** Comma-separated addresses or CIDR ranges (or proxy-addr's names loopback, linklocal, uniquelocal); empty: none. */
export const addressList: Parser<string[]> = (raw) => {
  const list = items(raw);
  for (const item of list) {
    const [address = '', bits, extra] = item.split('/');
    const named = ['loopback', 'linklocal', 'uniquelocal'].includes(item);
    if (!named && (extra !== undefined || isIP(address) === 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits)))) {
      throw new Error(`expected addresses or CIDR ranges, got "${item}"`);
    }
  }
  return list;
};

/** Comma-separated host:port pairs; empty: none. */
export const hostPortList: Parser<{ host: string; port: number }[]> = (raw) =>
  items(raw).map((item) => {
    const match = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(item);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) throw new Error(`expected host:port, got "${item}"`);
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
  });

/** An integer, or null for an empty value: the setting is then derived (see its doc line). */
export const intOrDerived = (min: number, max: number): Parser<number | null> => (raw) => (raw === '' ? null : int(min, max)(raw));

export const nonEmpty = (pattern?: RegExp, what?: string): Parser<string> => (raw) => {
  if (raw.length === 0) throw new Error('must not be empty');
  if (pattern && !pattern.test(raw)) throw new Error(`expected ${what}, got "${raw}"`);
  return raw;
};
