/**
 * The workspace benchmark's command line (`main.ts`): `--help`, the flags with their defaults,
 * and a clear {@link FlagError} for an unknown flag or a value that is not what it takes.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Database as DatabaseName } from "./contender.js";
import { type HandlerKind, parseHandlerKind } from "./work.js";

/** A flag the benchmark does not know, or a value it cannot take; the message says which. */
export class FlagError extends Error {
  override readonly name = "FlagError";
}

/** What `--help` prints. */
export const usage = `Usage: node dist/main.js [flags]   (pnpm --filter @rowclaim/bench start -- [flags])

  --jobs N                 jobs per drain (10000)
  --workers LIST           worker counts on PostgreSQL and MariaDB (1,8)
  --sqlite-workers LIST    worker counts on SQLite (1)
  --rounds N               interleaved rounds of the drains and of the latency jobs (3)
  --latency-samples N      latency jobs per queue and scope; 0: no latency run (200)
  --url URL                PostgreSQL (ROWCLAIM_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test)
  --mysql URL              MariaDB/MySQL (ROWCLAIM_MYSQL_URL, else mysql://root@127.0.0.1:3306/test)
  --databases LIST         postgres,mysql,sqlite (all three)
  --only ID,ID             contender ids (every contender); with --latency-only, latency subjects
  --prefetch LIST          rowclaim's prefetch variants; 0: none (500)
  --pg-boss-batch LIST     pg-boss batch sizes (500)
  --subscribe JSON         rowclaim's subscribe options beside the workers ({})
  --handler KIND           async or sync (async)
  --latency-only           only the latency run
  --out DIR                where results.json and results.svg go (results)
  --help                   this text

The package README explains each figure.`;

/** The benchmark's settings, read from its flags. */
export interface BenchFlags {
  readonly help: boolean;
  readonly jobs: number;
  readonly serverWorkers: readonly number[];
  readonly sqliteWorkers: readonly number[];
  readonly rounds: number;
  readonly latencySamples: number;
  readonly url: string;
  readonly mysql: string;
  readonly databases: readonly DatabaseName[];
  readonly only: readonly string[] | undefined;
  /** As given: `main.ts` prints it back. */
  readonly subscribe: string;
  readonly pgBossBatches: readonly number[];
  readonly prefetch: readonly number[];
  readonly latencyOnly: boolean;
  readonly handler: HandlerKind;
  readonly out: string;
}

const knownDatabases: readonly DatabaseName[] = ["postgres", "mysql", "sqlite"];

function wholeNumber(flag: string, text: string, least: number): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isInteger(value) || value < least) {
    throw new FlagError(`--${flag} takes a whole number of at least ${least}, not ${JSON.stringify(text)}`);
  }
  return value;
}

function wholeNumbers(flag: string, text: string, least: number): number[] {
  const items = text.split(",").filter((item) => item.trim() !== "");
  if (items.length === 0)
    throw new FlagError(`--${flag} takes a comma-separated list, not ${JSON.stringify(text)}`);
  return items.map((item) => wholeNumber(flag, item, least));
}

/** node:util's parse of the flags, every value still text. */
function readFlags(args: string[], env: Readonly<Record<string, string | undefined>>) {
  return parseArgs({
    args,
    options: {
      help: { type: "boolean", default: false },
      jobs: { type: "string", default: "10000" },
      workers: { type: "string", default: "1,8" },
      "sqlite-workers": { type: "string", default: "1" },
      rounds: { type: "string", default: "3" },
      "latency-samples": { type: "string", default: "200" },
      url: {
        type: "string",
        default: env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
      },
      mysql: { type: "string", default: env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
      databases: { type: "string", default: "postgres,mysql,sqlite" },
      only: { type: "string" },
      subscribe: { type: "string", default: "{}" },
      "pg-boss-batch": { type: "string", default: "500" },
      prefetch: { type: "string", default: "500" },
      "latency-only": { type: "boolean", default: false },
      handler: { type: "string", default: "async" },
      out: { type: "string", default: "results" },
    },
    allowPositionals: false,
  }).values;
}

/**
 * Reads the benchmark's flags from `args` (a leading `--`, as `pnpm … start -- --flag` passes it,
 * is skipped) and `env` (the database URLs' defaults).
 *
 * @throws {FlagError} an unknown flag, a missing value, or a value the flag does not take.
 */
export function parseBenchFlags(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): BenchFlags {
  let values: ReturnType<typeof readFlags>;
  try {
    values = readFlags(
      args.filter((arg, index) => index > 0 || arg !== "--"),
      env,
    );
  } catch (error) {
    throw new FlagError(`${(error as Error).message}. --help lists the flags.`);
  }
  const databases = values.databases.split(",").filter((name) => name.trim() !== "");
  const unknown = databases.find((name) => !(knownDatabases as readonly string[]).includes(name));
  if (unknown !== undefined || databases.length === 0) {
    throw new FlagError(
      `--databases takes a list of ${knownDatabases.join(", ")}, not ${JSON.stringify(values.databases)}`,
    );
  }
  let handler: HandlerKind;
  try {
    handler = parseHandlerKind(values.handler);
  } catch (error) {
    throw new FlagError((error as Error).message);
  }
  let subscribe: unknown;
  try {
    subscribe = JSON.parse(values.subscribe);
  } catch {
    subscribe = undefined;
  }
  if (typeof subscribe !== "object" || subscribe === null || Array.isArray(subscribe)) {
    throw new FlagError(`--subscribe takes a JSON object, not ${JSON.stringify(values.subscribe)}`);
  }
  return {
    help: values.help,
    jobs: wholeNumber("jobs", values.jobs, 1),
    serverWorkers: wholeNumbers("workers", values.workers, 1),
    sqliteWorkers: wholeNumbers("sqlite-workers", values["sqlite-workers"], 1),
    rounds: wholeNumber("rounds", values.rounds, 1),
    latencySamples: wholeNumber("latency-samples", values["latency-samples"], 0),
    url: values.url,
    mysql: values.mysql,
    databases: databases as DatabaseName[],
    only: values.only?.split(","),
    subscribe: values.subscribe,
    pgBossBatches: wholeNumbers("pg-boss-batch", values["pg-boss-batch"], 1),
    prefetch: wholeNumbers("prefetch", values.prefetch, 0).filter((size) => size > 0),
    latencyOnly: values["latency-only"],
    handler,
    out: values.out,
  };
}
