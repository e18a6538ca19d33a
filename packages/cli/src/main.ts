/**
 * The `rowclaim` command line: finds the command, parses its flags, runs it and turns what
 * went wrong into a message and an exit code (2 for a wrong command line, 1 for a failure).
 *
 * @module
 */
import { formatCommandHelp, parseFlags, UsageError } from "./args.js";
import { type Command, type CommandIO, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./command.js";
import { benchCommand } from "./commands/bench.js";
import { cancelCommand } from "./commands/cancel.js";
import { checkCommand } from "./commands/check.js";
import { dashboardCommand } from "./commands/dashboard.js";
import { demoCommand } from "./commands/demo.js";
import { pauseCommand, resumeCommand } from "./commands/pause.js";
import { pruneCommand } from "./commands/prune.js";
import { redriveCommand } from "./commands/redrive.js";
import { schedulesCommand } from "./commands/schedules.js";
import { schemaCommand } from "./commands/schema.js";
import { statusCommand } from "./commands/status.js";

/** Every command, in the order `--help` lists them. */
export const commands: readonly Command[] = Object.freeze([
  demoCommand,
  schemaCommand,
  checkCommand,
  statusCommand,
  pauseCommand,
  resumeCommand,
  schedulesCommand,
  cancelCommand,
  redriveCommand,
  pruneCommand,
  dashboardCommand,
  benchCommand,
]);

/** The top-level `--help` text. */
export function formatHelp(): string {
  const width = Math.max(...commands.map((command) => command.spec.name.length));
  return [
    "rowclaim: a job and message queue kept in your own SQL tables.",
    "",
    "Usage: rowclaim <command> [flags]",
    "",
    "Commands:",
    ...commands.map((command) => `  ${command.spec.name.padEnd(width)}  ${command.spec.summary}`),
    "",
    "Databases (--url): postgres://… or postgresql://… (PostgreSQL), mysql://… or mariadb://… (MySQL 8.0.1+,",
    "MariaDB 10.6+), sqlite:FILE or a plain file path (SQLite).",
    "",
    'Run "rowclaim <command> --help" for its flags.',
    "",
  ].join("\n");
}

/**
 * Runs the command line `argv` (without `node` and the script) and resolves to the exit code.
 * Never throws: errors are written to `io.stderr`.
 */
export async function main(argv: readonly string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (name === undefined) {
      io.stderr.write(`rowclaim needs a command.\n\n${formatHelp()}`);
      return EXIT_USAGE;
    }
    if (name === "--help" || name === "-h" || name === "help") {
      const topic = rest[0];
      if (name === "help" && topic !== undefined) {
        const command = findCommand(topic);
        io.stdout.write(formatCommandHelp(command.spec));
        return EXIT_OK;
      }
      io.stdout.write(formatHelp());
      return EXIT_OK;
    }
    if (name === "--version" || name === "-v") {
      io.stdout.write(`${await version()}\n`);
      return EXIT_OK;
    }
    const command = findCommand(name);
    const flags = parseFlags(command.spec, rest);
    if (flags.help) {
      io.stdout.write(formatCommandHelp(command.spec));
      return EXIT_OK;
    }
    return await command.run(flags, io);
  } catch (error) {
    if (error instanceof UsageError) {
      const hint = error.command === undefined ? "rowclaim --help" : `rowclaim ${error.command} --help`;
      io.stderr.write(`rowclaim: ${error.message}\nRun "${hint}" for usage.\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`rowclaim${name === undefined ? "" : ` ${name}`}: ${describeError(error)}\n`);
    return EXIT_FAILED;
  }
}

function findCommand(name: string): Command {
  const command = commands.find((candidate) => candidate.spec.name === name);
  if (command === undefined) {
    const known = commands.map((candidate) => candidate.spec.name).join(", ");
    throw new UsageError(
      name.startsWith("-")
        ? `"${name}" is not a command; the commands are ${known}.`
        : `Unknown command "${name}". The commands are ${known}.`,
    );
  }
  return command;
}

/** An error for people: its code (rowclaim and database errors have one) and message. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message =
      error.message === "" && error instanceof AggregateError
        ? error.errors.map(describeError).join("; ")
        : error.message;
    return typeof code === "string" ? `${message} (${code})` : message;
  }
  return String(error);
}

async function version(): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(new URL("../package.json", import.meta.url), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}
