/**
 * The ack carrier, one for the three forms: an ack (a lease or advisory row's, or a row lock
 * batch's end with its acks) waits, within the event-loop turn in which it became ready, for the
 * worker's next claim to carry it in the same round trip, else goes alone at the end of the
 * turn. A worker frees its slot when it acks, so its next claim starts within that turn; an
 * ack no claim took (a full subscription, an empty queue) waits one turn at most, or two where
 * a claim carried other acks in its turn after it was set (a claim loop that gives the event
 * loop a turn after a claim claims again in the next one: see `#setEndOfTurn`).
 *
 * Where the claimer cannot carry acks, they go alone at once. A carrier of `oneAtATime` runs one
 * send (or carrying claim) at a time: acks ready meanwhile wait for it, and then go together.
 *
 * @module
 */

/** At least one. */
export type NonEmpty<A> = readonly [A, ...A[]];

function isNonEmpty<A>(list: readonly A[]): list is NonEmpty<A> {
  return list.length > 0;
}

/** The last of `list`. */
export function lastOf<A>(list: NonEmpty<A>): A {
  return list[list.length - 1] ?? list[0];
}

/** How a runtime's acks travel. */
export interface AckCarrierOptions<A> {
  /** Whether the claimer can carry acks with a claim; else they go alone at once. */
  readonly carried: boolean;
  /** Runs one send or carrying claim at a time (acks ready meanwhile wait for it); else side by side. */
  readonly oneAtATime: boolean;
  /** Takes, from the front of `waiting` (in place), the acks that one send or one claim takes. */
  readonly take: (waiting: A[]) => A[];
  /** Sends `acks` on their own. Never rejects: each ack answers its own delivery. */
  readonly alone: (acks: NonEmpty<A>) => Promise<void>;
}

/** Acks waiting for the next claim (see the module's notes). */
export class AckCarrier<A> {
  readonly #options: AckCarrierOptions<A>;
  readonly #waiting: A[] = [];
  /** A send or carrying claim in flight (`oneAtATime` only). */
  #busy = false;
  /** Whether the end of this turn is set to send the acks left. */
  #endOfTurn = false;
  /** Whether a claim carried acks since the end of the turn was set (see `#setEndOfTurn`). */
  #carriedSinceSet = false;

  constructor(options: AckCarrierOptions<A>) {
    this.#options = options;
  }

  /** Whether a claim can carry acks (the claimer offers it). */
  get carried(): boolean {
    return this.#options.carried;
  }

  /** One more ack ready: it waits for a claim within this turn, or goes at once where none can carry it. */
  add(ack: A): void {
    this.#waiting.push(ack);
    // The send or claim in flight takes it, or sets the turn's end for it, once it is done.
    if (this.#busy) return;
    if (this.#options.carried) this.#setEndOfTurn();
    else void this.#send();
  }

  /**
   * A claim: `carry(acks)` with the acks waiting now where the claimer can carry them (and none
   * is in flight, for a carrier of `oneAtATime`), else `alone()`. Should `carry` throw, nothing
   * of it was committed: the acks go alone, then the claim runs alone, so each reports its own
   * error.
   */
  async claim<R>(carry: (acks: NonEmpty<A>) => Promise<R>, alone: () => Promise<R>): Promise<R> {
    if (!this.#options.carried || this.#busy || this.#waiting.length === 0) return alone();
    const acks = this.#options.take(this.#waiting);
    if (!isNonEmpty(acks)) return alone();
    this.#busy = this.#options.oneAtATime;
    this.#carriedSinceSet = true;
    try {
      return await carry(acks);
    } catch {
      await this.#options.alone(acks);
      return await alone();
    } finally {
      this.#busy = false;
      if (this.#waiting.length > 0) this.#setEndOfTurn();
    }
  }

  /** Sends every ack waiting now on its own (the runtime closes). */
  flush(): void {
    if (!this.#busy) void this.#send();
  }

  /**
   * Sets the end of this turn to send the acks left. Where a claim carried acks meanwhile, the
   * acks left became ready after it, in a turn of claims: they wait for the end of the next turn
   * instead. A claim loop that gives the event loop a turn after a claim (a synchronous driver's)
   * then claims in that turn, carrying them; the end set before it would send them alone at the
   * turn's start, and the claim would commit alone after them.
   */
  #setEndOfTurn(): void {
    if (this.#endOfTurn) return;
    this.#endOfTurn = true;
    this.#carriedSinceSet = false;
    setImmediate(() => {
      this.#endOfTurn = false;
      if (this.#carriedSinceSet) {
        if (this.#waiting.length > 0) this.#setEndOfTurn();
        return;
      }
      if (!this.#busy) void this.#send();
    });
  }

  /** Sends the waiting acks alone: one group after another (`oneAtATime`), else every group at once. */
  async #send(): Promise<void> {
    const { take, alone, oneAtATime } = this.#options;
    if (!oneAtATime) {
      for (let acks = take(this.#waiting); isNonEmpty(acks); acks = take(this.#waiting)) void alone(acks);
      return;
    }
    this.#busy = true;
    try {
      for (let acks = take(this.#waiting); isNonEmpty(acks); acks = take(this.#waiting)) await alone(acks);
    } finally {
      this.#busy = false;
    }
  }
}
