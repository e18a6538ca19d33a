/**
 * The due-time wake of a claim loop: a subscription that retried or delayed a row knows when
 * that row becomes due (it wrote the time itself), so it wakes then instead of at its next
 * poll. One timer per subscription, armed for the earliest such time; times are read from the
 * broker's clock (`createBroker({ clock })`), so a test that moves that clock moves the wake.
 *
 * @module
 */

/** The longest a timer is armed for at once (Node's timers hold at most 2^31 − 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/** Wakes a claim loop when the earliest time it was told of comes. */
export class DueWake {
  readonly #wake: () => void;
  readonly #now: () => number;
  #at: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * @param wake wakes the claim loop.
   * @param now the host's clock, in milliseconds.
   */
  constructor(wake: () => void, now: () => number) {
    this.#wake = wake;
    this.#now = now;
  }

  /** The time the timer is armed for, in milliseconds of the host's clock (`undefined`: none). */
  get dueAt(): number | undefined {
    return this.#at;
  }

  /** Wakes the loop at `due` (at once when it has passed), unless an earlier wake is armed. */
  at(due: Date | number): void {
    if (this.#closed) return;
    const time = typeof due === "number" ? due : due.getTime();
    if (this.#at !== undefined && this.#at <= time) return;
    this.#at = time;
    this.#arm();
  }

  /** Clears the timer for good (the subscription stopped). */
  close(): void {
    this.#closed = true;
    this.#at = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const at = this.#at;
    if (at === undefined) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, at - this.#now()));
    this.#timer = setTimeout(() => this.#fire(), delay);
    // A due-time wake never keeps the process alive on its own.
    this.#timer.unref?.();
  }

  #fire(): void {
    this.#timer = undefined;
    const at = this.#at;
    if (at === undefined) return;
    // A timer may fire a little early by the host's clock, and a controlled clock may not have
    // moved yet: wait on until the clock says the time has come.
    if (this.#now() < at) {
      this.#arm();
      return;
    }
    this.#at = undefined;
    this.#wake();
  }
}
