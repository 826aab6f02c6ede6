// Trace and span ids as the SDK's RandomIdGenerator makes them (Math.random, 32 bits at a time, an
// all-zero id made valid), written as hex through a table instead of a Buffer: an id is made for
// every request, sampled or not, and the Buffer's writes and hex encoding were about 2 µs of the
// 3.5 % of an admission's CPU that tracing at 1 % took (bench/admission, --profile).
import type { IdGenerator } from '@opentelemetry/sdk-trace';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

const word = () => (Math.random() * 2 ** 32) >>> 0;
const hex = (n: number) => HEX[n >>> 24]! + HEX[(n >>> 16) & 255]! + HEX[(n >>> 8) & 255]! + HEX[n & 255]!;

/** `words` random 32-bit words as hex; never all zeros (an invalid id). */
function randomId(words: number): string {
  let id = '';
  let any = 0;
  for (let i = 0; i < words; i++) {
    const n = i === words - 1 && any === 0 ? word() || 1 : word();
    any |= n;
    id += hex(n);
  }
  return id;
}

export const tableIds: IdGenerator = {
  generateTraceId: () => randomId(4),
  generateSpanId: () => randomId(2),
};
