// The API's id rule (docs/api.md): 1 to 19 digits, no leading zero, at most 2^63 − 1. An id the
// page takes from its address goes into a request path only when it passes: anything else could
// steer the request (`1/../../orders`) elsewhere, with the signed-in token.
const ID = /^[1-9][0-9]{0,18}$/;
const MAX = 9223372036854775807n;

/** @param {unknown} text @returns {text is string} */
export const isId = (text) => typeof text === 'string' && ID.test(text) && BigInt(text) <= MAX;
