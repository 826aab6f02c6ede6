// 64-bit ids arrive as decimal strings; they are kept as bigint in code, strings in JSON.
const MAX_ID = (1n << 63n) - 1n;
export const ID_PATTERN = '^[1-9][0-9]{0,18}$';
const ID_RE = new RegExp(ID_PATTERN);

/** The id, or null when the text is not a positive 64-bit (signed range) decimal integer. */
export function parseId(text: string): bigint | null {
  if (!ID_RE.test(text)) return null;
  const id = BigInt(text);
  return id <= MAX_ID ? id : null;
}

const MAX_ID_TEXT = MAX_ID.toString();

/** parseId's check without making a bigint: the text when it is such an id, else null. */
export function idText(text: string): string | null {
  if (!ID_RE.test(text)) return null;
  // Same length: comparing the digits as text compares the numbers.
  return text.length < MAX_ID_TEXT.length || text <= MAX_ID_TEXT ? text : null;
}
