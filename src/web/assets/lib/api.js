// The API client of the pages: JSON over fetch with the bearer token of the session. Every
// failure becomes an ApiError with the contract's code and message, so the page can show it.

export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message @param {any} [body] @param {number | null} [retryAfter] */
  constructor(status, code, message, body, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body ?? {};
    /** Seconds the server asked to wait (its Retry-After), when it said. */
    this.retryAfter = retryAfter;
  }
}

/** The error of a response that is not ok. @param {Response} res */
export async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON: a proxy's page, a cut connection */
  }
  const retryAfter = Number.parseInt(res.headers.get('retry-after') ?? '', 10);
  return new ApiError(
    res.status,
    body?.code ?? `HTTP_${res.status}`,
    body?.message ?? `${res.status} ${res.statusText}`,
    body,
    Number.isFinite(retryAfter) ? retryAfter : null,
  );
}

/**
 * @param {() => string | null} token
 * @param {(err: ApiError) => void} onUnauthorized called on a 401 (the token expired or is wrong)
 */
export function createApi(token, onUnauthorized) {
  /** @param {string} method @param {string} path @param {any} [body] @param {Record<string, string>} [headers] */
  async function request(method, path, body, headers = {}) {
    /** @type {Record<string, string>} */
    const all = { ...headers };
    const t = token();
    if (t) all.authorization = `Bearer ${t}`;
    if (body !== undefined) all['content-type'] = 'application/json';
    let res;
    try {
      res = await fetch(path, { method, headers: all, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new ApiError(0, 'NETWORK', 'the server cannot be reached; check your connection and retry');
    }
    if (!res.ok) {
      const err = await errorOf(res);
      if (res.status === 401) onUnauthorized(err);
      throw err;
    }
    return res.status === 204 ? null : res.json();
  }
  return {
    /** @param {string} path */
    get: (path) => request('GET', path),
    /** @param {string} path @param {any} [body] @param {Record<string, string>} [headers] */
    post: (path, body, headers) => request('POST', path, body ?? {}, headers),
  };
}
