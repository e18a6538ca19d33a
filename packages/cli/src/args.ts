/**
 * The command line's own argument parser: `--flag value`, `--flag=value`, boolean `--flag` and
 * `--no-flag`, repeatable flags, and `-h`/`--help`. No dependencies. Anything it does not know
 * is a {@link UsageError}, which the command line turns into exit code 2.
 *
 * @module
 */

/** The kinds of value a flag takes. */
export type FlagType = "string" | "integer" | "boolean";

/** One flag a command accepts. */
export interface FlagSpec {
  /** What the value is: text, a whole number, or on/off. */
  readonly type: FlagType;
  /** One line for `--help`. */
  readonly description: string;
  /** The placeholder shown in `--help` (`URL`, `N`, …). Not used for booleans. */
  readonly value?: string;
  /** Allowed values of a string flag. */
  readonly choices?: readonly string[];
  /** The smallest allowed value of an integer flag. Default 1. */
  readonly min?: number;
  /** The largest allowed value of an integer flag. */
  readonly max?: number;
  /** Whether the flag may be given more than once (its value is then a list; commas also split). */
  readonly multiple?: boolean;
  /** Whether the flag must be given. */
  readonly required?: boolean;
  /** Shown in `--help` as the default. */
  readonly defaultText?: string;
}

/** A command's name, summary, examples and flags, as `--help` shows them. */
export interface CommandSpec {
  /** The command's name (`demo`, `schema`, …). */
  readonly name: string;
  /** How the command is run, as its messages and `--help` name it. Default: `rowclaim <name>`. */
  readonly invocation?: string;
  /** One line saying what it does. */
  readonly summary: string;
  /** More lines for `--help`. */
  readonly details?: readonly string[];
  /** Example invocations for `--help`. */
  readonly examples?: readonly string[];
  /** The flags it takes, by long name without the dashes. */
  readonly flags: Readonly<Record<string, FlagSpec>>;
}

/** How `spec`'s command is run, as its messages and `--help` name it. */
function invocationOf(spec: CommandSpec): string {
  return spec.invocation ?? `rowclaim ${spec.name}`;
}

/** A parsed flag value. */
export type FlagValue = string | number | boolean | readonly string[] | readonly number[];

/** What {@link parseFlags} returns. */
export interface ParsedFlags {
  /** Values of the flags given, by long name. Flags not given are absent. */
  readonly values: Readonly<Record<string, FlagValue>>;
  /** Whether `-h` or `--help` was given. */
  readonly help: boolean;
}

/** A mistake in the command line: unknown command or flag, a missing or bad value. Exit code 2. */
export class UsageError extends Error {
  /** The command the mistake is in, for the `--help` hint; undefined for the top level. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.name = "UsageError";
    this.command = command;
  }
}

/**
 * Parses a command's arguments (everything after the command name) against its flags.
 *
 * @throws {UsageError} for an unknown flag, a positional argument, a missing or invalid value,
 * a flag given twice that is not repeatable, or a required flag left out (unless `--help` was given).
 */
export function parseFlags(spec: CommandSpec, argv: readonly string[]): ParsedFlags {
  const invocation = invocationOf(spec);
  const values: Record<string, FlagValue> = {};
  let help = false;
  const fail = (message: string): never => {
    throw new UsageError(message, spec.name);
  };
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    if (arg === "-h" || arg === "--help") {
      help = true;
      continue;
    }
    // A bare "--" (as package-manager scripts sometimes pass along) separates nothing here.
    if (arg === "--") continue;
    if (!arg.startsWith("--") || arg.length === 2) {
      fail(`Unexpected argument "${arg}": ${invocation} takes only --flags.`);
    }
    const body = arg.slice(2);
    const equals = body.indexOf("=");
    let name = equals === -1 ? body : body.slice(0, equals);
    let inline: string | undefined = equals === -1 ? undefined : body.slice(equals + 1);
    let flag = spec.flags[name];
    let negated = false;
    if (flag === undefined && name.startsWith("no-") && spec.flags[name.slice(3)]?.type === "boolean") {
      name = name.slice(3);
      flag = spec.flags[name];
      negated = true;
      if (inline !== undefined) fail(`--no-${name} takes no value.`);
    }
    if (flag === undefined) {
      const known = Object.keys(spec.flags).map((known) => `--${known}`);
      fail(
        `Unknown flag --${name} for ${invocation}.${known.length > 0 ? ` It takes ${known.join(", ")}.` : ""}`,
      );
      return { values, help };
    }
    if (flag.type === "boolean") {
      if (inline !== undefined) {
        if (inline === "true") inline = undefined;
        else if (inline === "false") negated = true;
        else fail(`--${name} is on or off: write --${name} or --no-${name}, not --${name}=${inline}.`);
      }
      if (name in values) fail(`--${name} is given twice.`);
      values[name] = !negated;
      continue;
    }
    let raw = inline;
    if (raw === undefined) {
      const next = argv[index + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        fail(`--${name} needs a value: --${name} ${flag.value ?? "VALUE"}.`);
      }
      raw = next as string;
      index += 1;
    }
    const parts = flag.multiple === true ? raw.split(",").filter((part) => part !== "") : [raw];
    if (parts.length === 0) fail(`--${name} needs a value: --${name} ${flag.value ?? "VALUE"}.`);
    const parsed = parts.map((part) => parseValue(spec, name, flag, part));
    if (flag.multiple === true) {
      const before = (values[name] ?? []) as readonly (string | number)[];
      values[name] = [...before, ...parsed] as readonly string[] | readonly number[];
    } else {
      if (name in values) fail(`--${name} is given twice.`);
      values[name] = parsed[0] as string | number;
    }
  }
  if (!help) {
    for (const [name, flag] of Object.entries(spec.flags)) {
      if (flag.required === true && !(name in values)) {
        fail(`${invocation} needs --${name} ${flag.value ?? "VALUE"}.`);
      }
    }
  }
  return { values, help };
}

function parseValue(spec: CommandSpec, name: string, flag: FlagSpec, raw: string): string | number {
  const fail = (message: string): never => {
    throw new UsageError(message, spec.name);
  };
  if (flag.type === "integer") {
    if (!/^-?\d+$/.test(raw)) fail(`--${name} takes a whole number, not "${raw}".`);
    const value = Number(raw);
    const min = flag.min ?? 1;
    if (!Number.isSafeInteger(value) || value < min) fail(`--${name} must be at least ${min}, not ${raw}.`);
    if (flag.max !== undefined && value > flag.max)
      fail(`--${name} must be at most ${flag.max}, not ${raw}.`);
    return value;
  }
  if (raw === "") fail(`--${name} needs a non-empty value.`);
  if (flag.choices !== undefined && !flag.choices.includes(raw)) {
    fail(`--${name} takes ${flag.choices.join(", ")}; "${raw}" is not one of them.`);
  }
  return raw;
}

/** Reads a string flag's value, or `fallback` when it was not given. */
export function stringFlag(parsed: ParsedFlags, name: string): string | undefined;
export function stringFlag(parsed: ParsedFlags, name: string, fallback: string): string;
export function stringFlag(parsed: ParsedFlags, name: string, fallback?: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : fallback;
}

/** Reads an integer flag's value, or `fallback` when it was not given. */
export function integerFlag(parsed: ParsedFlags, name: string, fallback: number): number {
  const value = parsed.values[name];
  return typeof value === "number" ? value : fallback;
}

/** Reads a repeatable integer flag's values, or `fallback` when it was not given. */
export function integerListFlag(
  parsed: ParsedFlags,
  name: string,
  fallback: readonly number[],
): readonly number[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value.map(Number) : fallback;
}

/** Reads a boolean flag's value, or `fallback` when it was not given. */
export function booleanFlag(parsed: ParsedFlags, name: string, fallback = false): boolean {
  const value = parsed.values[name];
  return typeof value === "boolean" ? value : fallback;
}

/** Reads a repeatable string flag's values (empty when it was not given). */
export function listFlag(parsed: ParsedFlags, name: string): readonly string[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value.map(String) : [];
}

/** The `--help` text of one command. */
export function formatCommandHelp(spec: CommandSpec): string {
  const invocation = invocationOf(spec);
  const lines = [`${invocation}: ${spec.summary}`, ""];
  if (spec.details !== undefined) lines.push(...spec.details, "");
  lines.push(`Usage: ${invocation} [flags]`, "", "Flags:");
  const entries = Object.entries(spec.flags).map(([name, flag]) => {
    const left = flag.type === "boolean" ? `--${name}` : `--${name} ${flag.value ?? "VALUE"}`;
    const notes: string[] = [];
    if (flag.choices !== undefined) notes.push(`one of ${flag.choices.join(", ")}`);
    if (flag.multiple === true) notes.push("repeatable, or comma-separated");
    if (flag.required === true) notes.push("required");
    if (flag.defaultText !== undefined) notes.push(`default ${flag.defaultText}`);
    return [left, notes.length > 0 ? `${flag.description} (${notes.join("; ")})` : flag.description] as const;
  });
  entries.push(["-h, --help", "Show this help."]);
  const width = Math.max(...entries.map(([left]) => left.length));
  for (const [left, right] of entries) lines.push(`  ${left.padEnd(width)}  ${right}`);
  if (spec.examples !== undefined && spec.examples.length > 0) {
    lines.push("", "Examples:", ...spec.examples.map((example) => `  ${example}`));
  }
  return `${lines.join("\n")}\n`;
}
