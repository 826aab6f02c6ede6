// Server-sent events read with fetch (EventSource cannot send an Authorization header, and a
// token in the URL would end up in logs). Reconnects after a drop; gives up on a 4xx.
import { errorOf } from './api.js';

/**
 * @param {string} url
 * @param {string} token
 * @param {{onEvent: (type: string, data: any) => void, onError: (err: any, final: boolean) => void}} handlers
 * @returns {() => void} stops the stream
 */
export function openEvents(url, token, { onEvent, onError }) {
  const abort = new AbortController();
  let retryMs = 3000;
  async function run() {
    while (!abort.signal.aborted) {
      try {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: abort.signal });
        if (!res.ok || !res.body) {
          const err = await errorOf(res);
          const final = res.status >= 400 && res.status < 500;
          onError(err, final);
          if (final) return;
        } else {
          await readBlocks(res.body, (type, data) => {
            if (type === 'retry') retryMs = Number(data) || retryMs;
            else onEvent(type, data);
          });
          if (!abort.signal.aborted) onError(new Error('the live stream ended; reconnecting'), false);
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        onError(err, false);
      }
      await new Promise((r) => setTimeout(r, retryMs));
    }
  }
  void run();
  return () => abort.abort();
}

/** @param {ReadableStream<Uint8Array>} body @param {(type: string, data: any) => void} onBlock */
async function readBlocks(body, onBlock) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) type = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
        else if (line.startsWith('retry: ')) onBlock('retry', line.slice(7));
      }
      if (data) onBlock(type, JSON.parse(data));
    }
  }
}
