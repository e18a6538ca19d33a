/**
 * Starting a child runner from a test and reading the events it prints.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ChildConfig, ChildEvent } from "./child-protocol.js";
import { waitFor } from "./wait.js";

/** The child runner's file: `child.js` beside this module in `dist`. */
export function childRunnerPath(): string {
  const beside = fileURLToPath(new URL("./child.js", import.meta.url));
  if (existsSync(beside)) return beside;
  const built = fileURLToPath(new URL("../dist/child.js", import.meta.url));
  if (existsSync(built)) return built;
  throw new Error(
    "@rowclaim/conformance: dist/child.js is missing; build the package first (pnpm --filter @rowclaim/conformance build).",
  );
}

/** A running child runner. */
export class ChildRunner {
  /** Every event the child printed so far. */
  readonly events: ChildEvent[] = [];
  /** What the child wrote to stderr (for failure messages). */
  stderr = "";
  readonly #process: ChildProcess;
  /** Resolves with the exit code (or `null` when a signal ended it) once the child exited. */
  readonly exited: Promise<number | null>;
  #exitCode: number | null | undefined;

  /**
   * @param runner the runner script to start (default: the child runner, {@link childRunnerPath});
   * another runner of the package (the transactional handler tests' own) reads its own config.
   */
  constructor(config: ChildConfig, runner: string = childRunnerPath()) {
    this.#process = spawn(process.execPath, [runner, JSON.stringify(config)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: process.env,
    });
    let pending = "";
    this.#process.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line.startsWith("{")) {
          try {
            this.events.push(JSON.parse(line) as ChildEvent);
          } catch {
            // Not one of ours: a driver's own output.
          }
        }
        newline = pending.indexOf("\n");
      }
    });
    this.#process.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    this.exited = new Promise((resolve) => {
      this.#process.on("exit", (code) => {
        this.#exitCode = code;
        resolve(code);
      });
    });
  }

  /** Whether the child has exited. */
  get hasExited(): boolean {
    return this.#exitCode !== undefined;
  }

  /** Waits for the first event `match` accepts, failing early when the child fails or exits. */
  async next<E extends ChildEvent>(
    what: string,
    match: (event: ChildEvent) => event is E,
    timeoutMs?: number,
  ): Promise<E> {
    return waitFor(
      `the child process to report ${what}`,
      () => {
        const found = this.events.find(match);
        if (found !== undefined) return found;
        const failed = this.events.find((event) => event.event === "failed");
        if (failed !== undefined)
          throw new Error(`The child process failed: ${JSON.stringify(failed)}\n${this.stderr}`);
        if (this.hasExited)
          throw new Error(
            `The child process exited (code ${String(this.#exitCode)}) before ${what}.\n${this.stderr}`,
          );
        return undefined;
      },
      timeoutMs === undefined ? {} : { timeoutMs },
    );
  }

  /** Sends `signal` to the child. */
  kill(signal: NodeJS.Signals): void {
    if (!this.hasExited) this.#process.kill(signal);
  }
}

/** Matches a `ready` event. */
export const isReady = (event: ChildEvent): event is Extract<ChildEvent, { event: "ready" }> =>
  event.event === "ready";
/** Matches a `started` event. */
export const isStarted = (event: ChildEvent): event is Extract<ChildEvent, { event: "started" }> =>
  event.event === "started";
/** Matches a `finished` event. */
export const isFinished = (event: ChildEvent): event is Extract<ChildEvent, { event: "finished" }> =>
  event.event === "finished";
/** Matches a `published` event. */
export const isPublished = (event: ChildEvent): event is Extract<ChildEvent, { event: "published" }> =>
  event.event === "published";
/** Matches a `closed` event. */
export const isClosed = (event: ChildEvent): event is Extract<ChildEvent, { event: "closed" }> =>
  event.event === "closed";
