/**
 * Clock skew between the host and the database, for lease tables. The lease form's expiries are
 * computed on the host (every settlement compares them), but a claim takes a row whose expiry
 * has passed by the host's clock: a host whose clock runs ahead of the others by more than the
 * time left on a live lease takes that lease, and a row is delivered twice. Leases in work are
 * extended each half lease, so a live lease always has about half a lease left.
 *
 * The broker reads the database's clock ({@link Driver.databaseTime}) as a shared reference: at
 * subscribe, then every {@link ClockSkewOptions.intervalMs} before a claim. The skew is the host
 * clock at the middle of the round trip minus the database's clock; half the round trip is
 * subtracted from it as measuring error. Beyond {@link ClockSkewOptions.warnFraction} of the lease
 * (default a tenth) the broker warns; beyond {@link ClockSkewOptions.refuseFraction} (default a
 * quarter, half of the half lease a live lease keeps) it refuses to claim: `subscribe` throws
 * {@link ClockSkewError}, and a running subscription claims nothing (logging the error once)
 * until the clocks agree again.
 *
 * @module
 */
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { ClockSkewError, DeclarationError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { TableDefinition } from "./table.js";

/** How the broker checks clock skew on lease tables (`createBroker({ clockSkew })`). */
export interface ClockSkewOptions {
  /** Warn when the skew exceeds this fraction of the lease. Default 0.1. */
  readonly warnFraction?: number;
  /** Refuse to claim when the skew exceeds this fraction of the lease. Default 0.25. */
  readonly refuseFraction?: number;
  /** How often a running subscription measures again, in milliseconds. Default 60 000. */
  readonly intervalMs?: number;
}

/** The defaults of {@link ClockSkewOptions}. */
export const clockSkewDefaults = Object.freeze({
  warnFraction: 0.1,
  refuseFraction: 0.25,
  intervalMs: 60_000,
});

/** One measurement. */
export interface ClockSkewReading {
  /** Host clock minus database clock, in milliseconds (positive: the host runs ahead). */
  readonly skewMs: number;
  /** Half the round trip of the measurement, in milliseconds. */
  readonly uncertaintyMs: number;
  /** The skew beyond the uncertainty (never negative), compared with the thresholds. */
  readonly beyondMs: number;
  /** What the reading means for the table. */
  readonly verdict: "ok" | "warn" | "refuse";
}

/**
 * Measures and judges the clock skew of one lease subscription. The host clock is injectable
 * (`createBroker({ clock })`), which is how the tests fake a skewed host.
 */
export class ClockSkewMonitor {
  readonly #table: TableDefinition;
  readonly #databaseTime: () => Promise<Date>;
  readonly #clock: () => Date;
  readonly #logger: Logger;
  readonly #warnMs: number;
  readonly #refuseMs: number;
  readonly #intervalMs: number;
  readonly #host: string;
  #last: ClockSkewReading | undefined;
  #measuredAt = Number.NEGATIVE_INFINITY;
  #measuring: Promise<ClockSkewReading> | undefined;

  constructor(args: {
    table: TableDefinition;
    databaseTime: () => Promise<Date>;
    clock: () => Date;
    logger: Logger;
    options?: ClockSkewOptions | undefined;
    host?: string;
  }) {
    const options = args.options ?? {};
    const warnFraction = options.warnFraction ?? clockSkewDefaults.warnFraction;
    const refuseFraction = options.refuseFraction ?? clockSkewDefaults.refuseFraction;
    const intervalMs = options.intervalMs ?? clockSkewDefaults.intervalMs;
    for (const [name, value] of [
      ["warnFraction", warnFraction],
      ["refuseFraction", refuseFraction],
      ["intervalMs", intervalMs],
    ] as const) {
      if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
        throw new DeclarationError(`createBroker({ clockSkew }): ${name} must be a number above 0.`, {
          table: args.table.name,
        });
      }
    }
    if (warnFraction > refuseFraction) {
      throw new DeclarationError(
        "createBroker({ clockSkew }): warnFraction must not be above refuseFraction.",
        { table: args.table.name },
      );
    }
    this.#table = args.table;
    this.#databaseTime = args.databaseTime;
    this.#clock = args.clock;
    this.#logger = args.logger;
    this.#warnMs = warnFraction * args.table.leaseSeconds * 1000;
    this.#refuseMs = refuseFraction * args.table.leaseSeconds * 1000;
    this.#intervalMs = intervalMs;
    this.#host = args.host ?? hostname();
  }

  /** The last reading, if any. */
  get last(): ClockSkewReading | undefined {
    return this.#last;
  }

  /** Measures once. */
  async measure(): Promise<ClockSkewReading> {
    const started = performance.now();
    const hostStart = this.#clock().getTime();
    const database = (await this.#databaseTime()).getTime();
    const roundTrip = performance.now() - started;
    const skewMs = Math.round(hostStart + roundTrip / 2 - database);
    const uncertaintyMs = Math.ceil(roundTrip / 2) + 1;
    const beyondMs = Math.max(0, Math.abs(skewMs) - uncertaintyMs);
    const verdict = beyondMs > this.#refuseMs ? "refuse" : beyondMs > this.#warnMs ? "warn" : "ok";
    return { skewMs, uncertaintyMs, beyondMs, verdict };
  }

  /**
   * At subscribe: measures, warns beyond the warning fraction.
   *
   * @throws {ClockSkewError} beyond the refusal fraction.
   */
  async assertAtSubscribe(): Promise<void> {
    const reading = await this.#remeasure();
    if (reading.verdict === "refuse") throw this.#error(reading);
  }

  /**
   * Before a claim: measures again when the last reading is older than the interval (every claim
   * while refusing). Returns whether the subscription may claim; logs a change of verdict once.
   */
  async mayClaim(): Promise<boolean> {
    const stale =
      this.#last === undefined ||
      this.#last.verdict === "refuse" ||
      performance.now() - this.#measuredAt >= this.#intervalMs;
    if (stale) {
      try {
        await this.#remeasure();
      } catch (error) {
        this.#logger.warn(
          `Table "${this.#table.name}" (lease form): reading the database clock for the clock-skew check failed; keeping the last reading.`,
          { error },
        );
      }
    }
    return this.#last?.verdict !== "refuse";
  }

  #remeasure(): Promise<ClockSkewReading> {
    this.#measuring ??= this.measure()
      .then((reading) => {
        const before = this.#last?.verdict;
        this.#last = reading;
        this.#measuredAt = performance.now();
        if (reading.verdict !== before) this.#report(reading, before);
        return reading;
      })
      .finally(() => {
        this.#measuring = undefined;
      });
    return this.#measuring;
  }

  #report(reading: ClockSkewReading, before: ClockSkewReading["verdict"] | undefined): void {
    const details = {
      skewMs: reading.skewMs,
      uncertaintyMs: reading.uncertaintyMs,
      host: this.#host,
      leaseSeconds: this.#table.leaseSeconds,
    };
    if (reading.verdict === "warn") {
      this.#logger.warn(
        `Table "${this.#table.name}" (lease form): the clock of host "${this.#host}" is ${describeSkew(reading.skewMs)} the database's, more than ${Math.round(this.#warnMs)} ms (${this.#fraction(this.#warnMs)} of the ${this.#table.leaseSeconds} s lease). Leases are computed on the host; at ${Math.round(this.#refuseMs)} ms this host stops claiming. Synchronise the clock (NTP, chrony).`,
        details,
      );
    } else if (reading.verdict === "refuse" && before !== undefined) {
      const error = this.#error(reading);
      this.#logger.error(error.message, { ...details, err: error, code: error.code });
    } else if (reading.verdict === "ok" && before === "refuse") {
      this.#logger.warn(
        `Table "${this.#table.name}" (lease form): the clock of host "${this.#host}" agrees with the database's again (${describeSkew(reading.skewMs)}); claiming again.`,
        details,
      );
    }
  }

  #fraction(ms: number): string {
    return `${Math.round((ms / (this.#table.leaseSeconds * 1000)) * 100)}%`;
  }

  #error(reading: ClockSkewReading): ClockSkewError {
    return new ClockSkewError(
      `Table "${this.#table.name}" (lease form): the clock of host "${this.#host}" is ${describeSkew(reading.skewMs)} the database's (±${reading.uncertaintyMs} ms), more than ${Math.round(this.#refuseMs)} ms (${this.#fraction(this.#refuseMs)} of the ${this.#table.leaseSeconds} s lease): this host would take leases that are still live, or lose its own. It claims nothing until the clocks agree. Synchronise the host's clock (NTP, chrony), or make the lease longer.`,
      {
        table: this.#table.name,
        skewMs: reading.skewMs,
        host: this.#host,
        leaseSeconds: this.#table.leaseSeconds,
      },
    );
  }
}

function describeSkew(skewMs: number): string {
  return skewMs >= 0 ? `${skewMs} ms ahead of` : `${-skewMs} ms behind`;
}
