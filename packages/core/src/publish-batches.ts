/**
 * Publish batching, written once for the drivers: how many rows one multi-row statement may
 * carry under the database's limit on parameters, the rows cut into such statements in order,
 * and the statements built once per shape (the row count, which optional values are given) and
 * kept in a bounded cache. The statement text and how it runs stay with each driver.
 *
 * @module
 */

/**
 * The most rows one multi-row statement may carry when each row binds `parametersPerRow`
 * parameters: as many as fit in `maxParameters` (the database's limit, or a margin below it),
 * at most `maxRows`, and never fewer than one.
 */
export function rowsPerStatement(
  parametersPerRow: number,
  maxParameters: number,
  maxRows: number = Number.POSITIVE_INFINITY,
): number {
  return Math.max(1, Math.min(maxRows, Math.floor(maxParameters / Math.max(1, parametersPerRow))));
}

/** `rows` cut, in order, into consecutive statements of at most `size` rows each (none for no rows). */
export function statementChunks<T>(rows: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < rows.length; start += size) chunks.push(rows.slice(start, start + size));
  return chunks;
}

/**
 * Statements built once per shape and kept, at most `capacity` of them; past it, the one built
 * first is let go. A publish's statement depends on its row count and on which optional values
 * the rows give, so that a driver keeps the few shapes its callers use, never one per call.
 */
export class StatementCache<V> {
  readonly #capacity: number;
  readonly #built = new Map<string, V>();

  /** @param capacity how many statements are kept at most (a whole number, at least 1). */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** The statement of shape `key`: the one kept, or the one `build` makes now (then kept). */
  get(key: string, build: () => V): V {
    let statement = this.#built.get(key);
    if (statement === undefined) {
      statement = build();
      if (this.#built.size >= this.#capacity) {
        const oldest = this.#built.keys().next();
        if (oldest.done !== true) this.#built.delete(oldest.value);
      }
      this.#built.set(key, statement);
    }
    return statement;
  }

  /** How many statements are kept now. */
  get size(): number {
    return this.#built.size;
  }
}
