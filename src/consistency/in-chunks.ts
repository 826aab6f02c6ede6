/** Ids per `IN (...)` list: statements stay far below PostgreSQL's 65,535 parameters. */
export const IN_CHUNK = 1000;

/** `ids` in slices of IN_CHUNK, one `IN (...)` list each. */
export function* inChunks<T>(ids: readonly T[]): Generator<T[]> {
  for (let i = 0; i < ids.length; i += IN_CHUNK) yield ids.slice(i, i + IN_CHUNK);
}
