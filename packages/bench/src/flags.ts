/**
 * The workspace benchmark's command line (`main.ts`), read by the command line's own flag parser
 * (`rowclaim/bench`): the flags with their defaults, `--help`, and a `UsageError` naming the flag
 * for an unknown flag or a value it cannot take.
 *
 * @module
 */
import type { SubscribeOptions } from "@rowclaim/core";
import {
  booleanFlag,
  type CommandSpec,
  integerFlag,
  integerListFlag,
  listFlag,
  parseFlags,
  stringFlag,
  UsageError,
} from "rowclaim/bench";
import { type Database as DatabaseName, databaseNames } from "./contender.js";
import type { HandlerKind } from "./work.js";

const defaultPostgresUrl = "postgres://postgres@127.0.0.1:5432/test";
const defaultMysqlUrl = "mysql://root@127.0.0.1:3306/test";

/** The benchmark's flags, as `--help` shows them. */
export const benchCommand: CommandSpec = {
  name: "bench",
  invocation: "node dist/main.js",
  summary:
    "rowclaim beside graphile-worker, pg-boss, plainjob, hand-written loops and each database's bulk ceiling",
  details: [
    "Run it as `pnpm --filter @rowclaim/bench start -- [flags]` from the workspace, or from packages/bench.",
    "The package README explains each figure.",
  ],
  flags: {
    jobs: { type: "integer", value: "N", description: "Jobs per drain.", defaultText: "10000" },
    workers: {
      type: "integer",
      value: "LIST",
      multiple: true,
      description: "Worker counts on PostgreSQL and MariaDB.",
      defaultText: "1,8",
    },
    "sqlite-workers": {
      type: "integer",
      value: "LIST",
      multiple: true,
      description: "Worker counts on SQLite.",
      defaultText: "1",
    },
    rounds: {
      type: "integer",
      value: "N",
      description: "Interleaved rounds of the drains and of the latency jobs.",
      defaultText: "3",
    },
    "latency-samples": {
      type: "integer",
      value: "N",
      min: 0,
      description: "Latency jobs per queue and scope; 0: no latency run.",
      defaultText: "200",
    },
    url: {
      type: "string",
      value: "URL",
      description: "The PostgreSQL database.",
      defaultText: `ROWCLAIM_POSTGRES_URL, else ${defaultPostgresUrl}`,
    },
    mysql: {
      type: "string",
      value: "URL",
      description: "The MariaDB/MySQL database.",
      defaultText: `ROWCLAIM_MYSQL_URL, else ${defaultMysqlUrl}`,
    },
    databases: {
      type: "string",
      value: "LIST",
      choices: databaseNames,
      multiple: true,
      description: "The databases to run.",
      defaultText: "all three",
    },
    only: {
      type: "string",
      value: "ID,ID",
      multiple: true,
      description: "Contender ids; with --latency-only, latency subjects.",
      defaultText: "every one",
    },
    prefetch: {
      type: "integer",
      value: "LIST",
      min: 0,
      multiple: true,
      description: "rowclaim's prefetch variants; 0: none.",
      defaultText: "500",
    },
    "pg-boss-batch": {
      type: "integer",
      value: "LIST",
      multiple: true,
      description: "pg-boss batch sizes, one queue each.",
      defaultText: "500",
    },
    subscribe: {
      type: "string",
      value: "JSON",
      description: "rowclaim's subscribe options beside the workers, a JSON object.",
      defaultText: "{}",
    },
    handler: {
      type: "string",
      value: "KIND",
      choices: ["async", "sync"],
      description: "The handler every contender runs.",
      defaultText: "async",
    },
    "latency-only": { type: "boolean", description: "Only the latency run." },
    out: {
      type: "string",
      value: "DIR",
      description: "Where results.json and results.svg go.",
      defaultText: "results",
    },
  },
};

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
  readonly subscribe: SubscribeOptions;
  readonly pgBossBatches: readonly number[];
  readonly prefetch: readonly number[];
  readonly latencyOnly: boolean;
  readonly handler: HandlerKind;
  readonly out: string;
}

/**
 * Reads the benchmark's flags from `args` (a bare `--`, as `pnpm … start -- --flag` passes it, is
 * skipped) and `env` (the database URLs' defaults).
 *
 * @throws {UsageError} an unknown flag, a missing value, or a value the flag does not take.
 */
export function parseBenchFlags(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): BenchFlags {
  const parsed = parseFlags(benchCommand, args);
  const databases = listFlag(parsed, "databases") as readonly DatabaseName[];
  const only = listFlag(parsed, "only");
  const subscribeText = stringFlag(parsed, "subscribe", "{}");
  let subscribe: unknown;
  try {
    subscribe = JSON.parse(subscribeText);
  } catch {
    subscribe = undefined;
  }
  if (typeof subscribe !== "object" || subscribe === null || Array.isArray(subscribe)) {
    throw new UsageError(`--subscribe takes a JSON object, not ${JSON.stringify(subscribeText)}.`, "bench");
  }
  return {
    help: parsed.help,
    jobs: integerFlag(parsed, "jobs", 10_000),
    serverWorkers: integerListFlag(parsed, "workers", [1, 8]),
    sqliteWorkers: integerListFlag(parsed, "sqlite-workers", [1]),
    rounds: integerFlag(parsed, "rounds", 3),
    latencySamples: integerFlag(parsed, "latency-samples", 200),
    url: stringFlag(parsed, "url", env.ROWCLAIM_POSTGRES_URL ?? defaultPostgresUrl),
    mysql: stringFlag(parsed, "mysql", env.ROWCLAIM_MYSQL_URL ?? defaultMysqlUrl),
    databases: databases.length === 0 ? databaseNames : databases,
    only: only.length === 0 ? undefined : only,
    subscribe: subscribe as SubscribeOptions,
    pgBossBatches: integerListFlag(parsed, "pg-boss-batch", [500]),
    prefetch: integerListFlag(parsed, "prefetch", [500]).filter((size) => size > 0),
    latencyOnly: booleanFlag(parsed, "latency-only"),
    handler: stringFlag(parsed, "handler", "async") as HandlerKind,
    out: stringFlag(parsed, "out", "results"),
  };
}
