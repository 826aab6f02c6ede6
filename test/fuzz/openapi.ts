// The OpenAPI document as the fuzzer reads it: its operations, what each takes (path, query and
// header parameters, a JSON body) and the statuses it declares; and which operation a request
// reaches, matched on the path the server sees, as a client reading the document would expect.

export type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  nullable?: boolean;
  formatMinimum?: string;
  formatMaximum?: string;
};

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
}

export interface Operation {
  /** "GET /api/vouchers/{id}" */
  key: string;
  method: string;
  /** The document's path template. */
  path: string;
  parameters: Parameter[];
  /** The application/json request body's schema, when the operation takes one. */
  body?: JsonSchema;
  /** Declared statuses: exact ("404") or ranges ("4XX"). */
  statuses: string[];
  /** Media types declared per status. */
  content: Record<string, string[]>;
  /** The description of each status. */
  descriptions: Record<string, string>;
  /** The response headers declared per status. */
  responseHeaders: Record<string, string[]>;
  /** Whether the operation needs a bearer token (the document's security, global or its own). */
  secured: boolean;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  security?: unknown[];
}
interface OpenApiOperation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
  security?: unknown[];
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const upper = method.toUpperCase();
      ops.push({
        key: `${upper} ${path}`,
        method: upper,
        path,
        parameters: op.parameters ?? [],
        ...(op.requestBody?.content?.['application/json'] ? { body: op.requestBody.content['application/json'].schema } : {}),
        statuses: Object.keys(op.responses),
        content: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, Object.keys(r.content ?? {})])),
        descriptions: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, r.description])),
        responseHeaders: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, Object.keys(r.headers ?? {})])),
        secured: (op.security ?? doc.security ?? []).length > 0,
      });
    }
  }
  return ops;
}

/** The declared entry a status falls under: the exact code, else its range ("4XX"), else null. */
export function declaredAs(op: Operation, status: number): string | null {
  const exact = String(status);
  if (op.statuses.includes(exact)) return exact;
  const range = `${exact[0]}XX`;
  return op.statuses.includes(range) ? range : null;
}

/** What a request reaches on the server. */
export type Target =
  | { kind: 'operation'; op: Operation }
  /** A route the document leaves out on purpose (the pages' and the UI's static files). */
  | { kind: 'hidden'; pattern: string }
  /** A segment that is not valid percent-encoding: refused before any route. */
  | { kind: 'bad-url' }
  | { kind: 'none' };

/** Routes the server answers that the document leaves out: static files, and /docs/ beside /docs. */
const HIDDEN = ['/assets/*', '/docs/static/*', '/docs/'];

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** Whether `template` (a document path, or a HIDDEN pattern) matches the decoded segments. */
function matches(template: string, segments: string[]): boolean {
  const parts = template.split('/');
  if (parts.at(-1) === '*') return segments.length >= parts.length && parts.slice(0, -1).every((p, i) => p === segments[i]);
  // A parameter matches an empty segment too (find-my-way): /api/orders/ is GET /api/orders/{id} with id "".
  return parts.length === segments.length && parts.every((p, i) => /^\{.+\}$/.test(p) || p === segments[i]);
}

/**
 * The target of `method` on `pathname` (as the server receives it, undecoded): the router
 * decodes each segment and matches case-sensitively, with no trailing or duplicate slash
 * folded; HEAD reaches the GET of the same path.
 */
export function targetOf(ops: Operation[], method: string, pathname: string): Target {
  const raw = pathname.split('/');
  const segments = raw.map(decodeSegment);
  if (segments.some((s) => s === null)) return { kind: 'bad-url' };
  const decoded = segments as string[];
  const asMethod = method === 'HEAD' ? 'GET' : method;
  // A static segment wins over a parameter (find-my-way), e.g. /api/orders/events over /api/orders/{id}.
  const candidates = ops.filter((o) => o.method === asMethod && matches(o.path, decoded));
  const op = candidates.sort((a, b) => staticSegments(b.path) - staticSegments(a.path))[0];
  if (op) return { kind: 'operation', op };
  const hidden = method === 'GET' || method === 'HEAD' ? HIDDEN.find((h) => matches(h, decoded)) : undefined;
  return hidden ? { kind: 'hidden', pattern: hidden } : { kind: 'none' };
}

const staticSegments = (path: string) => path.split('/').filter((p) => p && !p.startsWith('{')).length;
