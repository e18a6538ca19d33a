/**
 * In-process wake-up: a publish wakes the subscriptions of its table at once instead of
 * leaving them to their next poll.
 *
 * @module
 */
import type { TableDefinition } from "./table.js";

type Waker = () => void;

const wakers = new Map<string, Set<Waker>>();

/** The key under which subscriptions of `table` wait. Keyed by dialect, schema and name. */
export function wakeKey(dialect: string, table: TableDefinition): string {
  return `${dialect}\u0000${table.schema ?? ""}\u0000${table.name}`;
}

/** Registers `waker` for `key`; returns the function that removes it. */
export function onWake(key: string, waker: Waker): () => void {
  let set = wakers.get(key);
  if (set === undefined) {
    set = new Set();
    wakers.set(key, set);
  }
  set.add(waker);
  return () => {
    const current = wakers.get(key);
    if (current === undefined) return;
    current.delete(waker);
    if (current.size === 0) wakers.delete(key);
  };
}

/** Wakes every subscription waiting on `key`. */
export function wake(key: string): void {
  const set = wakers.get(key);
  if (set === undefined) return;
  for (const waker of [...set]) waker();
}

/**
 * A wake-up signal for one claim loop. `generation` moves on every wake, so a loop that records
 * it before claiming can tell whether a wake came in while it was claiming and skip its sleep.
 */
export class WakeSignal {
  #generation = 0;
  #waiters = new Set<() => void>();

  /** How many wakes there have been. */
  get generation(): number {
    return this.#generation;
  }

  /** Wakes the loop. */
  wake(): void {
    this.#generation += 1;
    // Woken once per settled delivery: nothing to allocate when nobody waits.
    if (this.#waiters.size === 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const resolve of waiters) resolve();
  }

  /**
   * Waits `ms` milliseconds, or until a wake; returns at once when a wake came after
   * `generation` was read.
   */
  wait(ms: number, generation: number): Promise<void> {
    if (this.#generation !== generation) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /**
   * Waits for a wake, with no timer (for a wait every wake ends: a claim loop waiting for a free
   * worker, which every finished delivery and every stop wakes); returns at once when a wake
   * came after `generation` was read.
   */
  next(generation: number): Promise<void> {
    if (this.#generation !== generation) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.add(resolve);
    });
  }
}
