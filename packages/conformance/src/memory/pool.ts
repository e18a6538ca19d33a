/**
 * Connections of the memory database: nothing travels over them, but the forms hold them as
 * they hold a real server's (a row lock batch its transaction's, an advisory delivery its
 * session's), so a test sees how many a driver holds and whether it gave each back.
 *
 * @module
 */

/** One connection, checked out of a {@link MemoryPool}. */
export class MemoryConnection {
  readonly #pool: MemoryPool;
  #released = false;

  constructor(pool: MemoryPool) {
    this.#pool = pool;
  }

  /** Whether the connection went back to its pool. */
  get released(): boolean {
    return this.#released;
  }

  /**
   * Returns the connection to its pool.
   *
   * @throws {Error} when it was returned already (a driver bug the tests want to see).
   */
  release(): void {
    if (this.#released) throw new Error("memory database: a connection was released twice.");
    this.#released = true;
    this.#pool.returned(this);
  }
}

/**
 * A pool of memory connections: the driver's own (ended at `close()`), or one the user owns and
 * passes as `createMemoryDriver({ pool })` (left open).
 */
export class MemoryPool {
  readonly #out = new Set<MemoryConnection>();
  #ended = false;

  /** How many connections are checked out now. */
  get checkedOut(): number {
    return this.#out.size;
  }

  /** Whether {@link MemoryPool.end} was called. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Checks a connection out.
   *
   * @throws {Error} once the pool has ended.
   */
  acquire(): MemoryConnection {
    if (this.#ended) throw new Error("memory database: the pool has ended.");
    const connection = new MemoryConnection(this);
    this.#out.add(connection);
    return connection;
  }

  /** Called by a connection that went back. */
  returned(connection: MemoryConnection): void {
    this.#out.delete(connection);
  }

  /** Ends the pool: no connection is checked out after this. */
  end(): void {
    this.#ended = true;
  }
}
