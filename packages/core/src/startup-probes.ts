/**
 * The start-up probe algorithm every driver runs before a form relies on what its database
 * claims to do: the probes a form needs run in the driver's order, each at most until it decides
 * (a probe that could not decide, or failed, runs again at the next subscription), a probe the
 * user skipped (`skipProbes`) does not run, what was found is `driver.detected()`, and a probe
 * that finds the database unsafe for the form refuses the table with an
 * `UnsafeTopologyError` (code `PROBE_FAILED`) naming the probe. What a probe runs (its SQL, its
 * connections) and the words of its refusal are the driver's.
 *
 * @module
 */
import type { DetectedCapabilities, ProbeName } from "./driver.js";
import { UnsafeTopologyError } from "./errors.js";
import type { ClaimFormName, TableDefinition } from "./table.js";

/** One probe as a driver declares it to {@link ProbeFindings.check}. */
export interface StartupProbe {
  /** The probe's name (what `skipProbes` takes and the error's `probe` says). */
  readonly name: ProbeName;
  /** The forms that rely on it. */
  readonly forms: readonly ClaimFormName[];
  /**
   * Runs the probe (or answers from what it found before): `true` where the database is safe for
   * the form, `false` where it is not, `undefined` where it could not decide (try again later).
   */
  readonly safe: (table: TableDefinition) => Promise<boolean | undefined>;
  /** The refusal's message: what was found, why it breaks the form, the fix and how to skip the probe. */
  readonly refusal: (table: TableDefinition) => string;
}

/** What one driver's probes found, and which the user skipped. */
export class ProbeFindings {
  readonly #skip: ReadonlySet<ProbeName>;
  readonly #found: Partial<Record<ProbeName, boolean>> = {};

  /** @param skip the probes the user skipped (`skipProbes`). */
  constructor(skip: readonly ProbeName[] = []) {
    this.#skip = new Set(skip);
  }

  /** Whether the user skipped `probe`. */
  skips(probe: ProbeName): boolean {
    return this.#skip.has(probe);
  }

  /** What `probe` found, or `undefined` where it has not decided. */
  found(probe: ProbeName): boolean | undefined {
    return this.#found[probe];
  }

  /** Records what `probe` found, and returns it. */
  record(probe: ProbeName, value: boolean): boolean {
    this.#found[probe] = value;
    return value;
  }

  /** What the probes found so far (`driver.detected()`). */
  detected(): DetectedCapabilities {
    return Object.freeze({ ...this.#found });
  }

  /**
   * Runs, in order, the probes of `probes` that `table`'s form relies on and the user did not skip.
   *
   * @throws {UnsafeTopologyError} `PROBE_FAILED`: a probe found the database unsafe for the form.
   */
  async check(table: TableDefinition, probes: readonly StartupProbe[]): Promise<void> {
    for (const probe of probes) {
      if (!probe.forms.includes(table.form) || this.#skip.has(probe.name)) continue;
      if ((await probe.safe(table)) === false) {
        throw new UnsafeTopologyError(probe.refusal(table), { table: table.name, probe: probe.name });
      }
    }
  }
}

/**
 * A probe's run, kept once it decided: callers at the same time share one run, a decided result
 * (not `undefined`) is kept for good, and a run that could not decide or failed is forgotten, so
 * that the next call runs the probe again.
 */
export class DecidedOnce<T> {
  #decided: Promise<T> | undefined;
  #running: Promise<T | undefined> | undefined;

  /** The decided result, or `run`'s (shared with every caller while it runs). */
  get(run: () => Promise<T | undefined>): Promise<T | undefined> {
    if (this.#decided !== undefined) return this.#decided;
    this.#running ??= run().then(
      (value) => {
        this.#running = undefined;
        if (value !== undefined) this.#decided = Promise.resolve(value);
        return value;
      },
      (error: unknown) => {
        this.#running = undefined;
        throw error;
      },
    );
    return this.#running;
  }
}
