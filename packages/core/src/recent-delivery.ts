/**
 * The broker's most recent handler delivery, kept reachable until the next one or the broker's
 * close, so that the delivery path stays compiled while the queue is idle.
 *
 * V8 drops a function's optimized code when an object shape (hidden class) the code was compiled
 * for is collected, and the shape of a class's instances is collected once none is left and a
 * full garbage collection runs. An idle queue has no delivery left and gives the collector time
 * for a full collection, so its next burst ran the delivery path unoptimized while V8 compiled
 * some fifty functions again: in the benchmark's 10,000-job drain, a third of rowclaim's Node CPU.
 * One delivery kept alive keeps the shapes of its handler view, run, worker slot, hold and row,
 * and with them that code. It costs one store a delivery, and keeps one finished delivery (its
 * row, its payload, its subscription's handler) reachable until the next delivery or close.
 *
 * @module
 */

/** Where a broker keeps its most recent handler delivery (see the module's notes). */
export class RecentDelivery {
  #kept: object | undefined = undefined;

  /** The delivery kept now, if any. */
  get kept(): object | undefined {
    return this.#kept;
  }

  /** Keeps `delivery` (the handler's view of it), letting the one kept before go. */
  keep(delivery: object): void {
    this.#kept = delivery;
  }

  /** Lets the kept delivery go (the broker closed). */
  clear(): void {
    this.#kept = undefined;
  }
}
