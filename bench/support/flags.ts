// A bench's command line: `--name value` options with their defaults, read by node:util's
// parseArgs. A number default makes an integer option, checked (a typo fails the run instead of
// measuring NaN); a string default a string option, a boolean one a switch, null a string option
// with no default.
import { parseArgs } from 'node:util';

type Default = number | string | boolean | null;

export type Flags<D extends Record<string, Default>> = {
  [K in keyof D]: D[K] extends number ? number : D[K] extends boolean ? boolean : D[K] extends string ? string : string | undefined;
};

/** `raw`, the value of --name, as an integer of at least `min`. */
export function integer(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/** The options named by `defaults`, from `args`; an integer option is at least 1 unless `least` names another minimum. */
export function readFlags<const D extends Record<string, Default>>(defaults: D, least: { [K in keyof D]?: number } = {}, args = process.argv.slice(2)): Flags<D> {
  const entries = Object.entries(defaults);
  const options = Object.fromEntries(
    entries.map(([name, d]) => [name, typeof d === 'boolean' ? { type: 'boolean' as const, default: d } : { type: 'string' as const, ...(d === null ? {} : { default: String(d) }) }]),
  );
  const { values } = parseArgs({ args, options, strict: true });
  const minimum = least as Record<string, number | undefined>;
  return Object.fromEntries(entries.map(([name, d]) => [name, typeof d === 'number' ? integer(name, values[name] as string, minimum[name] ?? 1) : values[name]])) as Flags<D>;
}
