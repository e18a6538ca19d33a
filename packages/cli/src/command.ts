/**
 * What every command is: its flags (for parsing and `--help`) and a function that runs it.
 *
 * @module
 */
import type { CommandSpec, ParsedFlags } from "./args.js";
import type { ProgressStream } from "./progress.js";

/** Where a command writes: results to `stdout`, progress and messages to `stderr`. */
export interface CommandIO {
  readonly stdout: ProgressStream;
  readonly stderr: ProgressStream;
}

/** A command of the `rowclaim` command line. */
export interface Command {
  /** Its name, summary and flags. */
  readonly spec: CommandSpec;
  /** Runs it with parsed flags; resolves to the process's exit code. */
  run(flags: ParsedFlags, io: CommandIO): Promise<number>;
}

/** Exit code: success. */
export const EXIT_OK = 0;
/** Exit code: the command ran and failed (a database error, a demo that did not finish). */
export const EXIT_FAILED = 1;
/** Exit code: the command line itself was wrong (unknown command or flag, bad value). */
export const EXIT_USAGE = 2;
