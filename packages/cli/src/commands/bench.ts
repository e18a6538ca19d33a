/**
 * `rowclaim bench`: for each claim form, drains N pre-inserted no-op jobs with rowclaim (the
 * library's defaults unless `--batch` is given) and with a hand-written loop of the same
 * statements (`src/bench/*-loop.ts`), at each worker count, in interleaved rounds, and prints
 * the medians and the ratio rowclaim ÷ loop. A benchmark prints figures; nothing asserts them.
 *
 * @module
 */
import {
  type ClaimFormName,
  createBroker,
  type SubscribeOptions,
  type TableDefinition,
} from "@rowclaim/core";
import { analyzeTableSql, dropTableSql } from "../admin-sql.js";
import { booleanFlag, integerFlag, integerListFlag, listFlag, stringFlag } from "../args.js";
import { asyncNoOpHandler, type HandWrittenLoop, openHandWrittenLoop } from "../bench/loop.js";
import { type Contender, contenderOrder, formatRatio, median, perSecond } from "../bench/rounds.js";
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
import { formatTextTable } from "../text-table.js";

/** One contender's figures in one cell: jobs/s of each round, and their median. */
export interface ContenderFigures {
  /** Jobs per second, round by round (in the order the rounds ran). */
  readonly perSecond: readonly number[];
  /** The median of {@link ContenderFigures.perSecond}. */
  readonly median: number;
  /** The fewest jobs settled in a round (equal to the jobs when every round drained). */
  readonly drained: number;
}

/** One cell's figures: a form at a worker count, rowclaim beside the hand-written loop. */
export interface BenchResult {
  readonly form: ClaimFormName;
  readonly workers: number;
  /** The batch the subscription used (the library's default unless `--batch` was given). */
  readonly batch: number;
  readonly jobs: number;
  readonly rowclaim: ContenderFigures;
  readonly loop: ContenderFigures;
  /** rowclaim's median ÷ the loop's median. */
  readonly ratio: number;
}

/** The `bench` command. */
export const benchCommand: Command = {
  spec: {
    name: "bench",
    summary:
      "drain N no-op jobs per claim form with rowclaim and with a hand-written loop, print jobs/s and the ratio",
    details: [
      "For each form (every form the driver offers unless --form names some) and each --workers",
      "count: publishes N jobs into <prefix>_<form> (then ANALYZE, so the table has statistics as",
      "one in service has), drains them with rowclaim's defaults (a subscription with that many",
      "workers and no other option, unless --batch or --prefetch is given), then",
      "does the same with a hand-written loop of the same claim and settlement statements (one",
      "loop per worker, each on its own connection). Both run the same async handler,",
      "async (job) => { await work(job.payload) } with work an async no-op. Rounds interleave",
      "every measurement and the two take turns going first; the figures are the medians. The",
      "tables are dropped afterwards.",
    ],
    flags: {
      url: sessionUrlFlag,
      jobs: {
        type: "integer",
        value: "N",
        max: 10_000_000,
        defaultText: "5000",
        description: "Jobs per form, worker count and round.",
      },
      workers: {
        type: "integer",
        value: "N",
        max: 256,
        multiple: true,
        defaultText: "1,8",
        description: "Handlers running at once (rowclaim's workers; the loop's concurrent loops).",
      },
      batch: {
        type: "integer",
        value: "N",
        max: 1000,
        defaultText: "the library's default",
        description: "Rows one rowclaim claim takes at most (at most the workers plus --prefetch).",
      },
      prefetch: {
        type: "integer",
        value: "N",
        max: 10_000,
        defaultText: "0, the library's default",
        description:
          "The throughput option: rows rowclaim holds claimed ahead of its workers (lease and row lock forms; the advisory form is left out).",
      },
      form: {
        type: "string",
        value: "FORM",
        choices: formNames,
        multiple: true,
        description: "The forms to measure.",
      },
      rounds: {
        type: "integer",
        value: "N",
        max: 99,
        defaultText: "3",
        description: "Rounds; each figure is the median of its rounds.",
      },
      timeout: {
        type: "integer",
        value: "SECONDS",
        max: 86_400,
        defaultText: "300",
        description: "Give up one drain after this long.",
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
      "rowclaim bench --url postgres://postgres@127.0.0.1:5432/test --jobs 10000 --workers 1,8 --form lease,rowLock",
    ],
  },
  async run(flags, io) {
    const jobs = integerFlag(flags, "jobs", 5000);
    const workerCounts = [...new Set(integerListFlag(flags, "workers", [1, 8]))];
    const batch = typeof flags.values.batch === "number" ? flags.values.batch : undefined;
    const prefetch = typeof flags.values.prefetch === "number" ? flags.values.prefetch : undefined;
    const rounds = integerFlag(flags, "rounds", 3);
    const timeoutMs = integerFlag(flags, "timeout", 300) * 1000;
    const prefix = stringFlag(flags, "prefix", "rowclaim_bench");
    checkPrefix(prefix, "bench");
    if (batch !== undefined && workerCounts.some((workers) => workers + (prefetch ?? 0) < batch)) {
      io.stderr.write(
        `rowclaim bench: --batch ${batch} is larger than --workers ${Math.min(...workerCounts)}${prefetch === undefined ? "" : ` plus --prefetch ${prefetch}`}.\n`,
      );
      return EXIT_FAILED;
    }
    const most = Math.max(...workerCounts);
    const session = await openDatabaseSession(stringFlag(flags, "url"), "bench", most + 4);
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
      if (prefetch !== undefined && prefetch > 0 && asked.includes("advisory")) {
        io.stderr.write(
          "rowclaim bench: --prefetch holds rows ahead of the workers, which the advisory form refuses (each row it holds holds a connection).\n",
        );
        await session.driver.close();
        return EXIT_FAILED;
      }
      const forms = (
        asked.length > 0
          ? formNames.filter((form) => asked.includes(form))
          : formNames.filter((form) => offered.includes(form))
      ).filter((form) => prefetch === undefined || prefetch === 0 || form !== "advisory");
      return await runBench(
        session,
        {
          forms,
          jobs,
          workerCounts,
          batch,
          prefetch,
          rounds,
          timeoutMs,
          prefix,
          json: booleanFlag(flags, "json"),
        },
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
  readonly workerCounts: readonly number[];
  readonly batch: number | undefined;
  readonly prefetch: number | undefined;
  readonly rounds: number;
  readonly timeoutMs: number;
  readonly prefix: string;
  readonly json: boolean;
}

interface Cell {
  readonly form: ClaimFormName;
  readonly workers: number;
  readonly table: TableDefinition;
  batch: number;
  readonly figures: Record<Contender, { perSecond: number[]; drained: number[] }>;
}

/** The options `rowclaim bench` gives `subscribe`, as the text line says them. */
export function describeOptions(batch: number | undefined, prefetch?: number): string {
  const given = [
    "workers",
    ...(batch === undefined ? [] : [`batch: ${batch}`]),
    ...(prefetch === undefined ? [] : [`prefetch: ${prefetch}`]),
  ].join(", ");
  return `subscribe(table, handler, { ${given} }): every other option at the library's default${batch === undefined ? " (batch as printed per line)" : ""}`;
}

async function runBench(session: DatabaseSession, settings: BenchSettings, io: CommandIO): Promise<number> {
  const messages = new RunMessages(io.stderr);
  const broker = createBroker({ driver: session.driver, logger: messages.logger });
  io.stderr.write(
    `rowclaim bench on ${describeTarget(session.target)}: ${settings.jobs} jobs per drain, workers ${settings.workerCounts.join(" and ")}, ${settings.rounds} interleaved rounds, medians.\n` +
      `rowclaim: ${describeOptions(settings.batch, settings.prefetch)}. Loop: the same statements, one row a claim, one connection per worker.\n`,
  );
  const cells: Cell[] = [];
  for (const form of settings.forms) {
    const name = `${settings.prefix}_${formTableSuffix[form]}`;
    const table = standardTable({ name, form, key: `${name}:{account}` });
    for (const workers of settings.workerCounts) {
      cells.push({
        form,
        workers,
        table,
        batch: settings.batch ?? 0,
        figures: { rowclaim: { perSecond: [], drained: [] }, loop: { perSecond: [], drained: [] } },
      });
    }
  }
  const loops = new Map<ClaimFormName, HandWrittenLoop>();
  let short = false;
  try {
    for (const form of settings.forms) {
      const table = cells.find((cell) => cell.form === form)?.table as TableDefinition;
      loops.set(
        form,
        await openHandWrittenLoop(session.target, {
          table,
          form,
          connections: Math.max(...settings.workerCounts),
        }),
      );
    }
    for (let round = 0; round < settings.rounds; round += 1) {
      for (const cell of cells) {
        for (const contender of contenderOrder(round)) {
          const { table, form, workers } = cell;
          await recreateTables(session, [table.name], [table]);
          await publishInChunks(broker, table, settings.jobs, (n) => ({
            payload: { n },
            ...accountValues(form, `acct-${n % 1000}`),
          }));
          // Both contenders meet the table as one in service is: with planner statistics.
          await session.admin.execute(analyzeTableSql(session.target.dialect, table.name));
          const label = `${form} ×${workers} ${contender} (round ${round + 1}/${settings.rounds})`;
          let drained: number;
          let ms: number;
          // Each clock starts at the contender's first claim: set-up is left out on both sides.
          if (contender === "rowclaim") {
            const options: SubscribeOptions = {
              workers,
              ...(settings.batch === undefined ? {} : { batch: settings.batch }),
              ...(settings.prefetch === undefined ? {} : { prefetch: settings.prefetch }),
            };
            const subscription = await broker.subscribe(
              table,
              (job) => asyncNoOpHandler(job.payload),
              options,
            );
            const start = performance.now();
            cell.batch = subscription.batch;
            const { endedAt } = await messages.watch(
              () => [subscriptionProgress(label, settings.jobs, subscription)],
              () => subscription.stats.acked >= settings.jobs,
              { timeoutMs: settings.timeoutMs, everyMs: 2 },
            );
            ms = endedAt - start;
            drained = subscription.stats.acked;
            await subscription.stop({ timeout: 5000 });
          } else {
            const loop = loops.get(form) as HandWrittenLoop;
            let start = performance.now();
            drained = await loop.drain(workers, undefined, () => {
              start = performance.now();
            });
            ms = performance.now() - start;
          }
          if (drained < settings.jobs) {
            short = true;
            io.stderr.write(
              `rowclaim bench: ${label}: only ${drained} of ${settings.jobs} jobs drained within ${settings.timeoutMs / 1000} s.\n`,
            );
          }
          cell.figures[contender].perSecond.push(perSecond(drained, ms));
          cell.figures[contender].drained.push(drained);
        }
      }
    }
    for (const cell of cells)
      await session.admin.execute(dropTableSql(session.target.dialect, cell.table.name));
  } finally {
    for (const loop of loops.values()) await loop.close();
    await broker.close({ timeout: 5000 });
  }
  const results: BenchResult[] = cells.map((cell) => {
    const summary = (contender: Contender): ContenderFigures => ({
      perSecond: cell.figures[contender].perSecond.map(Math.round),
      median: Math.round(median(cell.figures[contender].perSecond)),
      drained: Math.min(...cell.figures[contender].drained),
    });
    const rowclaim = summary("rowclaim");
    const loop = summary("loop");
    return {
      form: cell.form,
      workers: cell.workers,
      batch: cell.batch,
      jobs: settings.jobs,
      rowclaim,
      loop,
      ratio: Number(
        formatRatio(median(cell.figures.rowclaim.perSecond), median(cell.figures.loop.perSecond)),
      ),
    };
  });
  if (settings.json) {
    io.stdout.write(
      `${JSON.stringify(
        {
          database: session.target.dialect,
          jobs: settings.jobs,
          rounds: settings.rounds,
          options: {
            batch: settings.batch ?? "default",
            ...(settings.prefetch === undefined ? {} : { prefetch: settings.prefetch }),
          },
          results,
        },
        null,
        2,
      )}\n`,
    );
  } else {
    io.stdout.write(formatBenchSummary(results));
  }
  return short ? EXIT_FAILED : EXIT_OK;
}

/** The bench figures: per form and worker count, the batch used, both medians and their ratio. */
export function formatBenchSummary(results: readonly BenchResult[]): string {
  const rows = results.map((result) => [
    result.form,
    String(result.workers),
    String(result.batch),
    String(result.jobs),
    String(result.rowclaim.median),
    String(result.loop.median),
    Number.isFinite(result.ratio) ? result.ratio.toFixed(2) : "-",
  ]);
  return `\n${formatTextTable(["form", "workers", "batch", "jobs", "rowclaim jobs/s", "loop jobs/s", "rowclaim ÷ loop"], rows)}`;
}
