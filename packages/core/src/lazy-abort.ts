/**
 * An abort signal made only when somebody asks for it. A delivery's `signal` is read by few
 * handlers, and an `AbortController` costs tens of microseconds to make in Node 20, as much as a
 * SQLite statement: runtimes keep one of these per held row instead.
 *
 * @module
 */

/** An `AbortController` made on first use of its signal; aborting before that only records the reason. */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  /** The signal; made now if nobody asked before (already aborted if {@link LazyAbort.abort} ran). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Whether {@link LazyAbort.abort} ran, without making the signal. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Aborts with `reason` (an `AbortError` when none), once; later calls change nothing. */
  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new DOMException("This operation was aborted", "AbortError");
    this.#controller?.abort(this.#reason);
  }
}
