/**
 * `rowclaim bench`: for each claim form, publishes N jobs, drains them with no-op handlers and
 * prints the publish rate and the drain rate. A benchmark prints figures; nothing asserts them.
 *
 * @module
 */
import { type ClaimFormName, createBroker } from "@rowclaim/core";
import { dropTableSql } from "../admin-sql.js";
import { booleanFlag, integerFlag, listFlag, stringFlag } from "../args.js";
import { type Command, type CommandIO, EXIT_FAILED, EXIT_OK } from "../command.js";
import {
  type DatabaseSession,
  openDatabaseSession,
  recreateTables,
  sessionUrlFlag,
} from "../database-session.js";
import { accountValues, publishInChunks, RunMessages, subscriptionProgress } from "../publish-drain.js";
import { checkPrefix, formNames, formTableSuffix, standardTable } from "../tables.js";
import { describeTarget } from "../target.js";
import { formatPerSecond, formatSeconds, formatTextTable } from "../text-table.js";

/** One form's figures. */
export interface BenchResult {
  readonly form: ClaimFormName;
  readonly table: string;
  readonly jobs: number;
  readonly publishMs: number;
  readonly drainMs: number;
  /** Jobs acked within the timeout. */
  readonly drained: number;
}

/** The `bench` command. */
export const benchCommand: Command = {
  spec: {
    name: "bench",
    summary: "publish N jobs per claim form, drain them with no-op handlers, print jobs/s",
    details: [
      "For each form (every form the driver offers unless --form names some): drops and creates",
      "<prefix>_<form>, publishes N jobs in chunks of 500 and times it, then drains them with",
      "handlers that do nothing and times that. The tables are dropped afterwards.",
    ],
    flags: {
      url: sessionUrlFlag,
      jobs: {
        type: "integer",
        value: "N",
        max: 10_000_000,
        defaultText: "5000",
        description: "Jobs per form.",
      },
      workers: {
        type: "integer",
        value: "N",
        max: 256,
        defaultText: "4",
        description: "Handlers running at once.",
      },
      batch: {
        type: "integer",
        value: "N",
        max: 1000,
        defaultText: "the workers",
        description: "Rows one claim takes at most.",
      },
      form: {
        type: "string",
        value: "FORM",
        choices: formNames,
        multiple: true,
        description: "The forms to measure.",
      },
      timeout: {
        type: "integer",
        value: "SECONDS",
        max: 86_400,
        defaultText: "300",
        description: "Give up a form's drain after this long.",
      },
      prefix: {
        type: "string",
        value: "NAME",
        defaultText: "rowclaim_bench",
        description: "The bench tables' name prefix.",
      },
      json: { type: "boolean", description: "Print the figures as JSON." },
    },
    examples: [
      "rowclaim bench",
      "rowclaim bench --url postgres://postgres@127.0.0.1:5432/test --jobs 20000 --workers 8 --form lease,advisory",
    ],
  },
  async run(flags, io) {
    const jobs = integerFlag(flags, "jobs", 5000);
    const workers = integerFlag(flags, "workers", 4);
    const batch = integerFlag(flags, "batch", workers);
    const timeoutMs = integerFlag(flags, "timeout", 300) * 1000;
    const prefix = stringFlag(flags, "prefix", "rowclaim_bench");
    checkPrefix(prefix, "bench");
    const session = await openDatabaseSession(stringFlag(flags, "url"), "bench", workers + 4);
    try {
      const offered = session.driver.capabilities.forms;
      const asked = listFlag(flags, "form") as ClaimFormName[];
      const missing = asked.filter((form) => !offered.includes(form));
      if (missing.length > 0) {
        io.stderr.write(
          `rowclaim bench: the ${session.driver.name} driver does not offer the ${missing.join(", ")} form.\n`,
        );
        await session.driver.close();
        return EXIT_FAILED;
      }
      const forms =
        asked.length > 0
          ? formNames.filter((form) => asked.includes(form))
          : formNames.filter((form) => offered.includes(form));
      return await runBench(
        session,
        { forms, jobs, workers, batch, timeoutMs, prefix, json: booleanFlag(flags, "json") },
        io,
      );
    } finally {
      await session.close();
    }
  },
};

interface BenchSettings {
  readonly forms: readonly ClaimFormName[];
  readonly jobs: number;
  readonly workers: number;
  readonly batch: number;
  readonly timeoutMs: number;
  readonly prefix: string;
  readonly json: boolean;
}

async function runBench(session: DatabaseSession, settings: BenchSettings, io: CommandIO): Promise<number> {
  const messages = new RunMessages(io.stderr);
  const broker = createBroker({ driver: session.driver, logger: messages.logger });
  io.stderr.write(
    `rowclaim bench on ${describeTarget(session.target)}: ${settings.jobs} jobs per form, ${settings.workers} workers, batch ${settings.batch}.\n`,
  );
  const results: BenchResult[] = [];
  try {
    for (const form of settings.forms) {
      const name = `${settings.prefix}_${formTableSuffix[form]}`;
      const table = standardTable({ name, form, key: `${name}:{account}` });
      await recreateTables(session, [name], [table]);
      const publishStart = performance.now();
      await publishInChunks(broker, table, settings.jobs, (n) => ({
        payload: { n },
        ...accountValues(form, `acct-${n % 1000}`),
      }));
      const publishMs = performance.now() - publishStart;
      const drainStart = performance.now();
      const subscription = await broker.subscribe(table, () => undefined, {
        workers: settings.workers,
        batch: settings.batch,
        pollInterval: 50,
      });
      const { endedAt } = await messages.watch(
        () => [subscriptionProgress(form, settings.jobs, subscription)],
        () => subscription.stats.acked >= settings.jobs,
        { timeoutMs: settings.timeoutMs, everyMs: 5 },
      );
      const drainMs = endedAt - drainStart;
      const drained = subscription.stats.acked;
      await subscription.stop({ timeout: 5000 });
      await session.admin.execute(dropTableSql(session.target.dialect, name));
      results.push({ form, table: name, jobs: settings.jobs, publishMs, drainMs, drained });
    }
  } finally {
    await broker.close({ timeout: 5000 });
  }
  if (settings.json) {
    io.stdout.write(
      `${JSON.stringify({ database: session.target.dialect, workers: settings.workers, batch: settings.batch, results }, null, 2)}\n`,
    );
  } else {
    io.stdout.write(formatBenchSummary(results));
  }
  const short = results.filter((result) => result.drained < result.jobs);
  for (const result of short) {
    io.stderr.write(
      `rowclaim bench: ${result.form}: only ${result.drained} of ${result.jobs} jobs drained within ${settings.timeoutMs / 1000} s.\n`,
    );
  }
  return short.length > 0 ? EXIT_FAILED : EXIT_OK;
}

/** The bench figures: publish and drain time and rate per form. */
export function formatBenchSummary(results: readonly BenchResult[]): string {
  const rows = results.map((result) => [
    result.form,
    String(result.jobs),
    formatSeconds(result.publishMs),
    formatPerSecond(result.jobs, result.publishMs),
    formatSeconds(result.drainMs),
    formatPerSecond(result.drained, result.drainMs),
  ]);
  return `\n${formatTextTable(["form", "jobs", "publish", "publish jobs/s", "drain", "drain jobs/s"], rows)}`;
}
