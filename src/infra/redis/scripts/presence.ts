// Presence of listeners on a channel (presence-1.lua), scored by Redis TIME: the order-event
// publishers' "is anyone listening?".
import type { ScriptCalls } from './loader.js';
import { scriptCall } from './loader.js';

export interface PresenceScripts {
  /** Announces `member` (null: nobody) as present for `ttlMs` on the set `key`; resolves to how many are present. */
  presence(key: string, member: string | null, ttlMs: number): Promise<number>;
}

export function presenceScripts(calls: ScriptCalls): PresenceScripts {
  const presence = scriptCall(calls, 'presence');
  return {
    presence: async (key, member, ttlMs) => Number(await presence(key, member ?? '', ttlMs)),
  };
}
