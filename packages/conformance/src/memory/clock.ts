/**
 * The memory database's clock: what "now" is for it (`databaseTime()`, the time the driver's
 * clock-skew readings report). Claims never read it: a claim is given the host's "now" by the
 * broker, as with every driver. Pass one {@link ManualClock} to both the driver and
 * `createBroker({ clock })` to move the host's and the database's time together, or skew one.
 *
 * @module
 */

/** A clock: the current time. */
export interface MemoryClock {
  /** The time now. */
  now(): Date;
}

/** The machine's own clock. */
export const systemClock: MemoryClock = Object.freeze({ now: () => new Date() });

/** A clock that moves only when told to: for deterministic tests. */
export interface ManualClock extends MemoryClock {
  /** Sets the time. */
  set(time: Date | number): void;
  /** Moves the time forward by `ms` milliseconds (backward when negative). */
  advance(ms: number): void;
  /** The clock as a function, the shape `createBroker({ clock })` takes. */
  readonly asFunction: () => Date;
}

/**
 * A clock standing at `start` (default: the machine's time now) until {@link ManualClock.set} or
 * {@link ManualClock.advance} moves it.
 *
 * @example
 * const clock = createManualClock(new Date("2030-01-01T00:00:00Z"));
 * const driver = createMemoryDriver({ database, clock });
 * const broker = createBroker({ driver, clock: clock.asFunction });
 * clock.advance(30_000); // every lease of 30 s has now run out
 */
export function createManualClock(start: Date | number = Date.now()): ManualClock {
  let time = typeof start === "number" ? start : start.getTime();
  const now = (): Date => new Date(time);
  return Object.freeze({
    now,
    asFunction: now,
    set(to: Date | number): void {
      time = typeof to === "number" ? to : to.getTime();
    },
    advance(ms: number): void {
      time += ms;
    },
  });
}
