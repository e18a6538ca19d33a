/**
 * What the interleaving tests watch a driver with: a count of the claimer calls a driver
 * answered (through the driver's public interface, so it works on every driver), and a log of
 * the statements an observed driver sends, in which a test can hold one statement back.
 *
 * @module
 */
import type { Driver } from "@rowclaim/core";
import type { Claimer } from "@rowclaim/core/driver";
import type { ObservedStatement, StatementObserver } from "./harness.js";

/** A driver whose claimers count every call they answered. */
export interface CountedDriver {
  /** The driver, as the broker uses it. */
  readonly driver: Driver;
  /**
   * How many claimer calls (claims, settlements, extensions: every call but `close`) have been
   * answered so far. While no row is delivered, each one is a claim that found nothing.
   */
  answered(): number;
}

/** Binds every function member of `target` to it, so private fields keep working behind a proxy. */
function passThrough<T extends object>(
  target: T,
  replace: (name: string | symbol, value: unknown) => unknown,
): T {
  return new Proxy(target, {
    get(inner, name) {
      const value: unknown = Reflect.get(inner, name, inner);
      const replaced = replace(name, value);
      if (replaced !== value) return replaced;
      return typeof value === "function" ? value.bind(inner) : value;
    },
  });
}

/** `driver`, its claimers counting the calls they answered. */
export function countAnswers(driver: Driver): CountedDriver {
  let answered = 0;
  const counted = (claimer: Claimer): Claimer =>
    passThrough(claimer, (name, value) => {
      if (typeof value !== "function" || name === "close") return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = Reflect.apply(value, claimer, args);
        Promise.resolve(result).then(
          () => {
            answered += 1;
          },
          () => {
            answered += 1;
          },
        );
        return result;
      };
    });
  const wrapped = passThrough(driver, (name, value) => {
    if (name !== "open" || typeof value !== "function") return value;
    return async (...args: unknown[]): Promise<Claimer> =>
      counted((await Reflect.apply(value, driver, args)) as Claimer);
  });
  return { driver: wrapped, answered: () => answered };
}

/** A statement the log held back, until {@link HeldStatement.resume}. */
export interface HeldStatement {
  /** Resolves with the statement once the driver tried to send it (it waits from then on). */
  readonly reached: Promise<ObservedStatement>;
  /** Whether the held statement's answer came back (after {@link HeldStatement.resume}). */
  readonly answered: boolean;
  /** Lets the statement go (again is harmless). */
  resume(): void;
}

/** A {@link StatementObserver} that logs every statement and can hold the next of a shape back. */
export class StatementLog implements StatementObserver {
  /** Every statement sent so far, in the order the driver tried to send them. */
  readonly sent: ObservedStatement[] = [];
  #hold: { readonly shape: RegExp; readonly held: HeldPoint } | undefined;
  readonly #holds: HeldPoint[] = [];

  before(statement: ObservedStatement): void | Promise<void> {
    this.sent.push(statement);
    const hold = this.#hold;
    if (hold === undefined || !hold.shape.test(statement.sql)) return;
    this.#hold = undefined;
    return hold.held.reach(statement);
  }

  after(statement: ObservedStatement): void {
    for (const held of this.#holds) held.answer(statement);
  }

  /** Holds back the next statement whose SQL matches `shape` (from now on), until resumed. */
  holdNext(shape: RegExp): HeldStatement {
    const held = new HeldPoint();
    this.#hold = { shape, held };
    this.#holds.push(held);
    return held;
  }

  /** Lets every held statement go (the fixture calls it when the test ends). */
  resumeAll(): void {
    this.#hold = undefined;
    for (const held of this.#holds) held.resume();
  }
}

class HeldPoint implements HeldStatement {
  readonly reached: Promise<ObservedStatement>;
  answered = false;
  #statement: ObservedStatement | undefined;
  #reach!: (statement: ObservedStatement) => void;
  #resume!: () => void;
  readonly #resumed: Promise<void>;

  constructor() {
    this.reached = new Promise((resolve) => {
      this.#reach = resolve;
    });
    this.#resumed = new Promise((resolve) => {
      this.#resume = resolve;
    });
  }

  reach(statement: ObservedStatement): Promise<void> {
    this.#statement = statement;
    this.#reach(statement);
    return this.#resumed;
  }

  answer(statement: ObservedStatement): void {
    if (statement === this.#statement) this.answered = true;
  }

  resume(): void {
    this.#resume();
  }
}
