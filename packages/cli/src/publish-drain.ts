/**
 * Publishing jobs and watching them drain: what `demo` and `bench` share once their database is
 * open. Jobs go out in chunks; broker messages go to stderr above the progress display; a drain
 * is watched with the display drawn until it ends or times out.
 *
 * @module
 */
import type {
  Broker,
  ClaimFormName,
  Logger,
  PublishMessage,
  Subscription,
  TableDefinition,
} from "@rowclaim/core";
import { ProgressDisplay, type ProgressSample, type ProgressStream } from "./progress.js";

/** Publishes `count` messages made by `message` in chunks of `chunk`, through `broker.publishMany`. */
export async function publishInChunks(
  broker: Broker,
  table: TableDefinition,
  count: number,
  message: (n: number) => PublishMessage,
  chunk = 500,
): Promise<void> {
  for (let start = 0; start < count; start += chunk) {
    const messages: PublishMessage[] = [];
    for (let n = start; n < Math.min(count, start + chunk); n += 1) messages.push(message(n));
    await broker.publishMany(table, messages);
  }
}

/**
 * The extra values a job of a `form` table carries: an advisory table's key names the `account`
 * column, so its rows get `account`; the other forms' rows get nothing extra.
 */
export function accountValues(
  form: ClaimFormName,
  account: string,
): { readonly values?: Readonly<Record<string, string>> } {
  return form === "advisory" ? { values: { account } } : {};
}

/**
 * Resolves `true` once `done()` holds (checked every `everyMs`), or `false` when `timeoutMs`
 * passed or `stop()` holds first.
 */
export async function waitFor(
  done: () => boolean,
  options: { timeoutMs: number; everyMs?: number; stop?: () => boolean },
): Promise<boolean> {
  const deadline = performance.now() + options.timeoutMs;
  while (!done()) {
    if (performance.now() >= deadline || options.stop?.() === true) return false;
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 20));
  }
  return true;
}

/** A progress line's counters from a subscription's stats: acked, retried and dead-lettered. */
export function subscriptionProgress(
  label: string,
  total: number,
  subscription: Subscription,
): ProgressSample {
  const { stats } = subscription;
  return {
    label,
    total,
    handled: stats.acked,
    retried: stats.retried,
    deadLettered: stats.deadLettered,
  };
}

/**
 * The broker's messages during a run: each is written to stderr as `[rowclaim] message` (with the
 * error's message after a colon), above the progress display while one is drawn, and kept in
 * {@link RunMessages.lines}.
 */
export class RunMessages {
  /** Every line written, in order. */
  readonly lines: string[] = [];
  /** The logger to give the broker. */
  readonly logger: Logger;
  readonly #stderr: ProgressStream;
  #display: ProgressDisplay | undefined;

  /**
   * @param stderr where the lines go
   * @param ignore errors that are expected (a demo's simulated failures): their messages are dropped
   */
  constructor(stderr: ProgressStream, ignore: (error: unknown) => boolean = () => false) {
    this.#stderr = stderr;
    this.logger = {
      warn: (message) => {
        this.write(`[rowclaim] ${message}`);
      },
      error: (message, details) => {
        const error = details?.err;
        if (ignore(error)) return;
        const cause = error instanceof Error ? `: ${error.message}` : "";
        this.write(`[rowclaim] ${message}${cause}`);
      },
    };
  }

  /** Writes `line` to stderr, above the progress display while one is drawn, and keeps it. */
  write(line: string): void {
    this.lines.push(line);
    if (this.#display !== undefined) this.#display.log(line);
    else this.#stderr.write(`${line}\n`);
  }

  /**
   * Draws a progress display of `sample` until `done()` holds, `timeoutMs` passed or `stop()`
   * holds, then draws its last frame. Resolves whether `done()` held and when the wait ended
   * (`performance.now()`, before the last frame). Messages meanwhile are written above the display.
   */
  async watch(
    sample: () => readonly ProgressSample[],
    done: () => boolean,
    options: { timeoutMs: number; everyMs?: number; stop?: () => boolean },
  ): Promise<{ readonly done: boolean; readonly endedAt: number }> {
    const display = new ProgressDisplay({ stream: this.#stderr, sample });
    this.#display = display;
    display.start();
    try {
      const held = await waitFor(done, options);
      return { done: held, endedAt: performance.now() };
    } finally {
      display.stop();
      this.#display = undefined;
    }
  }
}
