// Loads the Lua scripts of ../lua: each file is `name-<numKeys>.lua` (`name-n.lua`: the number of
// keys varies and is given per call; a name may have several words: `lease-end-2.lua`). A line
// `--! include lib/x.lua` is replaced by that file, each library at most once per script however
// often it is named (libraries may include others), so scripts share code without sharing a call.
// The sources are read and resolved once per process; ioredis' defineCommand then sends EVALSHA
// and falls back to EVAL when the server answers NOSCRIPT (script cache flushed, failover to a
// replica that never saw the script).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from '../client.js';

const LUA_DIR = fileURLToPath(new URL('../lua/', import.meta.url));
const INCLUDE = /^--! include (\S+)$/gm;

export type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;
export type ScriptCalls = Readonly<Record<string, ScriptCall>>;

interface ScriptSource {
  name: string;
  /** undefined: given per call (`name-n.lua`). */
  numberOfKeys?: number;
  lua: string;
}

/** The ioredis command of the script `name`. */
export const commandOf = (name: string) => `sk_${name.replaceAll('-', '_')}`;

function resolveIncludes(text: string, included: Set<string>): string {
  return text.replace(INCLUDE, (_, lib: string) => {
    if (included.has(lib)) return '';
    included.add(lib);
    return resolveIncludes(readFileSync(LUA_DIR + lib, 'utf8'), included);
  });
}

let sources: ScriptSource[] | null = null;

function scriptSources(): ScriptSource[] {
  sources ??= readdirSync(LUA_DIR).flatMap((file) => {
    const match = /^([a-z]+(?:-[a-z]+)*)-(\d+|n)\.lua$/.exec(file);
    if (!match) return [];
    const [, name, keys] = match as unknown as [string, string, string];
    const lua = resolveIncludes(readFileSync(LUA_DIR + file, 'utf8'), new Set());
    return [{ name, numberOfKeys: keys === 'n' ? undefined : Number(keys), lua }];
  });
  return sources;
}

/** Registers every script on the connection (once per connection) and returns a call per script name. */
export function loadScripts(redis: RedisClient): ScriptCalls {
  const calls: Record<string, ScriptCall> = {};
  for (const { name, numberOfKeys, lua } of scriptSources()) {
    const command = commandOf(name);
    if (!(command in redis)) redis.defineCommand(command, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
    calls[name] = (redis as unknown as Record<string, ScriptCall>)[command]!.bind(redis);
  }
  return calls;
}

/** A script call the server did not know (NOSCRIPT): nothing ran, and the script is loaded now. */
export class ScriptReloaded extends Error {}

/**
 * A call per script name by EVALSHA alone, for a connection whose next command must follow the
 * script on the wire (the WAIT after an admission): ioredis' own fallback would send the script
 * again after that command. A server without the script (cache flushed, a replica promoted that
 * never saw it) gets it loaded, and the call fails with ScriptReloaded for the caller to repeat.
 */
export function loadScriptsByHash(redis: RedisClient): ScriptCalls {
  return Object.fromEntries(
    scriptSources().map(({ name, numberOfKeys, lua }) => {
      const sha = createHash('sha1').update(lua).digest('hex');
      const call: ScriptCall = async (...args) => {
        try {
          return await redis.evalsha(sha, ...(numberOfKeys === undefined ? args : [numberOfKeys, ...args]) as [number, ...(string | number)[]]);
        } catch (err) {
          if (!(err as Error).message.startsWith('NOSCRIPT')) throw err;
          await redis.script('LOAD', lua);
          throw new ScriptReloaded(`script ${name} was not on the server; loaded again`);
        }
      };
      return [name, call];
    }),
  );
}

/** The call of one script; a missing file fails at start-up, not at the first call. */
export function scriptCall(calls: ScriptCalls, name: string): ScriptCall {
  const call = calls[name];
  if (!call) throw new Error(`no Lua script ${name}-<keys>.lua in ${LUA_DIR}`);
  return call;
}
