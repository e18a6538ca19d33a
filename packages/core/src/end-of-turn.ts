/**
 * Work set for the end of the event loop's current turn, once however often it is asked for:
 * the runtimes send the acks no claim took by then (an ack waits for its worker's next claim
 * only within the turn in which it became ready).
 *
 * @module
 */

/** Runs `work` once at the end of the turn (`setImmediate`) after {@link EndOfTurn.set}. */
export class EndOfTurn {
  readonly #work: () => void;
  #set = false;

  constructor(work: () => void) {
    this.#work = work;
  }

  /** Sets the work for the end of this turn, unless it is set already. */
  set(): void {
    if (this.#set) return;
    this.#set = true;
    setImmediate(() => {
      this.#set = false;
      this.#work();
    });
  }
}
