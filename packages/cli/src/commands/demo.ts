/**
 * `rowclaim demo`: creates a table per claim form the driver offers, publishes jobs into each,
 * drains them with several workers whose handlers sometimes fail (so retries with backoff happen
 * and some jobs reach the dead-letter group), shows progress on stderr and ends with a summary.
 *
 * @module
 */
import {
  ack,
  type ClaimFormName,
  createBroker,
  readQueueStatus,
  type Subscription,
  type TableDefinition,
} from "@rowclaim/core";
import { booleanFlag, integerFlag, stringFlag } from "../args.js";
import { type Command, type CommandIO, EXIT_FAILED, EXIT_OK } from "../command.js";
import { createDriver } from "../connect.js";
import {
  type DatabaseSession,
  openDatabaseSession,
  recreateTables,
  sessionUrlFlag,
} from "../database-session.js";
import {
  DEMO_DEAD_LETTER_GROUP,
  DEMO_MAX_ATTEMPTS,
  deliveryFails,
  type JobPlan,
  planJob,
} from "../job-plan.js";
import { accountValues, publishInChunks, RunMessages, subscriptionProgress } from "../publish-drain.js";
import { checkPrefix, formNames, formTableSuffix, standardTable } from "../tables.js";
import { describeTarget } from "../target.js";
import { formatPerSecond, formatSeconds, formatTextTable } from "../text-table.js";

/** The failure a demo handler throws on purpose. */
export class SimulatedFailure extends Error {
  constructor(plan: JobPlan, attempt: number) {
    super(`job ${plan.n} failed on purpose (attempt ${attempt})`);
    this.name = "SimulatedFailure";
  }
}

/** One table's result in the demo's summary. */
export interface DemoTableResult {
  readonly table: string;
  readonly form: ClaimFormName;
  readonly jobs: number;
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
  /** From subscribe to the last job handled or dead-lettered (or to the timeout), in ms. */
  readonly wallMs: number;
  /** Whether every job was handled or dead-lettered. */
  readonly complete: boolean;
}

/** The `demo` command. */
export const demoCommand: Command = {
  spec: {
    name: "demo",
    summary: "publish jobs into a table per claim form, drain them with workers, and summarise",
    details: [
      "With no --url the demo runs on a new SQLite file in a temporary directory: no set-up.",
      "It creates <prefix>_lease, <prefix>_advisory and <prefix>_row_lock (where the driver offers",
      "that form), dropping earlier tables of those names first. Handlers do a little simulated work;",
      "about 11 % of jobs fail once or twice and are retried with backoff, and 1 % always fail,",
      `reach maxAttempts (${DEMO_MAX_ATTEMPTS}) and move to the "${DEMO_DEAD_LETTER_GROUP}" group. Progress goes to stderr, the`,
      "summary to stdout. Exit code 0 when every job was handled or dead-lettered, 1 otherwise.",
    ],
    flags: {
      url: sessionUrlFlag,
      jobs: {
        type: "integer",
        value: "N",
        max: 1_000_000,
        defaultText: "3000",
        description: "Jobs published into each table.",
      },
      workers: {
        type: "integer",
        value: "N",
        max: 64,
        defaultText: "4",
        description: "Handlers running at once, per table.",
      },
      "work-ms": {
        type: "integer",
        value: "MS",
        min: 0,
        max: 10_000,
        defaultText: "2",
        description: "Simulated work per job: up to this many milliseconds.",
      },
      timeout: {
        type: "integer",
        value: "SECONDS",
        max: 86_400,
        defaultText: "50",
        description: "Give up after this long.",
      },
      prefix: {
        type: "string",
        value: "NAME",
        defaultText: "rowclaim_demo",
        description: "The demo tables' name prefix.",
      },
      json: { type: "boolean", description: "Print the summary as JSON." },
      keep: { type: "boolean", description: "Keep the temporary SQLite file (its path is printed)." },
    },
    examples: [
      "rowclaim demo",
      "rowclaim demo --url postgres://postgres@127.0.0.1:5432/test --jobs 5000 --workers 8",
      "rowclaim demo --url mysql://root@127.0.0.1:3306/test",
    ],
  },
  async run(flags, io) {
    const jobs = integerFlag(flags, "jobs", 3000);
    const workers = integerFlag(flags, "workers", 4);
    const workMs = integerFlag(flags, "work-ms", 2);
    const timeoutMs = integerFlag(flags, "timeout", 50) * 1000;
    const prefix = stringFlag(flags, "prefix", "rowclaim_demo");
    checkPrefix(prefix, "demo");
    const keep = booleanFlag(flags, "keep");
    // Row lock batches and advisory deliveries hold a connection each: room for every table's workers.
    const session = await openDatabaseSession(
      stringFlag(flags, "url"),
      "demo",
      formNames.length * workers + 6,
    );
    try {
      return await runDemo(
        session,
        { jobs, workers, workMs, timeoutMs, prefix, json: booleanFlag(flags, "json") },
        io,
      );
    } finally {
      await session.close({ keep });
      if (session.temporary && keep && session.target.dialect === "sqlite") {
        io.stderr.write(`The SQLite file is kept: ${session.target.filename}\n`);
      }
    }
  },
};

interface DemoSettings {
  readonly jobs: number;
  readonly workers: number;
  readonly workMs: number;
  readonly timeoutMs: number;
  readonly prefix: string;
  readonly json: boolean;
}

async function runDemo(session: DatabaseSession, settings: DemoSettings, io: CommandIO): Promise<number> {
  const { driver } = session;
  const forms = formNames.filter((form) => driver.capabilities.forms.includes(form));
  const skipped = formNames.filter((form) => !forms.includes(form));
  const tables = forms.map((form) => {
    const name = `${settings.prefix}_${formTableSuffix[form]}`;
    return standardTable({
      name,
      form,
      processedAt: true,
      key: `${name}:{account}`,
      lease: 10,
      maxAttempts: DEMO_MAX_ATTEMPTS,
      deadLetterGroup: DEMO_DEAD_LETTER_GROUP,
    });
  });
  io.stderr.write(
    `rowclaim demo on ${describeTarget(session.target)}: ${settings.jobs} jobs into each of ${tables.map((t) => t.name).join(", ")}, ${settings.workers} workers each.\n`,
  );
  if (skipped.length > 0)
    io.stderr.write(
      `The ${driver.name} driver does not offer the ${skipped.join(", ")} form; no table for it.\n`,
    );

  // Simulated failures are the demo's own; any other message is unexpected.
  const messages = new RunMessages(io.stderr, (error) => error instanceof SimulatedFailure);

  const allNames = formNames.map((form) => `${settings.prefix}_${formTableSuffix[form]}`);
  const broker = createBroker({ driver, logger: messages.logger });
  let interrupted = false;
  const onSignal = (): void => {
    interrupted = true;
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const results: DemoTableResult[] = [];
  try {
    await recreateTables(session, allNames, tables);
    const publishStart = performance.now();
    for (const table of tables) {
      await publishInChunks(broker, table, settings.jobs, (n) => {
        const plan = planJob(n);
        return { payload: plan, ...accountValues(table.form, plan.account) };
      });
    }
    io.stderr.write(
      `Published ${settings.jobs * tables.length} jobs in ${formatSeconds(performance.now() - publishStart)}; draining.\n`,
    );

    const workMs = settings.workMs;
    const handler = async (delivery: { payload: unknown; attempt: number }) => {
      const plan = delivery.payload as JobPlan;
      if (workMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * workMs));
      if (deliveryFails(plan, delivery.attempt)) throw new SimulatedFailure(plan, delivery.attempt);
      return ack();
    };
    const runs: {
      table: TableDefinition;
      subscription: Subscription;
      start: number;
      end: number | undefined;
    }[] = [];
    const drainStart = performance.now();
    for (const table of tables) {
      const subscription = await broker.subscribe(table, handler, {
        workers: settings.workers,
        batch: settings.workers,
        pollInterval: 50,
        backoff: { baseMs: 20, maxMs: 200 },
      });
      runs.push({ table, subscription, start: drainStart, end: undefined });
    }
    const finished = (run: (typeof runs)[number]): boolean =>
      run.subscription.stats.acked + run.subscription.stats.deadLettered >= settings.jobs;
    await messages.watch(
      () => runs.map((run) => subscriptionProgress(run.table.form, settings.jobs, run.subscription)),
      () => {
        const now = performance.now();
        for (const run of runs) if (run.end === undefined && finished(run)) run.end = now;
        return runs.every((run) => run.end !== undefined);
      },
      { timeoutMs: settings.timeoutMs, stop: () => interrupted },
    );
    const stoppedAt = performance.now();
    for (const run of runs) {
      const { stats } = run.subscription;
      results.push({
        table: run.table.name,
        form: run.table.form,
        jobs: settings.jobs,
        handled: stats.acked,
        retried: stats.retried,
        deadLettered: stats.deadLettered,
        wallMs: (run.end ?? stoppedAt) - run.start,
        complete: run.end !== undefined,
      });
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await broker.close({ timeout: 5000 });
  }

  // Cross-check with the tables themselves (core's status reading, as `rowclaim status`'s):
  // processed rows and the dead-letter group.
  const mismatches: string[] = [];
  const checker = await createDriver(session.target, { poolSize: 2 });
  try {
    for (const result of results) {
      const table = tables.find((candidate) => candidate.name === result.table);
      if (table === undefined) continue;
      const status = await readQueueStatus(checker, table, { cap: Number.MAX_SAFE_INTEGER });
      const processed = status.groups.reduce((sum, group) => sum + group.processed.count, 0);
      const dead = status.groups.reduce((sum, group) => sum + group.dead.count, 0);
      if (result.complete && (processed !== result.handled || dead !== result.deadLettered)) {
        mismatches.push(
          `${result.table}: the broker counted ${result.handled} handled and ${result.deadLettered} dead-lettered, the table holds ${processed} processed rows and ${dead} in group "${DEMO_DEAD_LETTER_GROUP}".`,
        );
      }
    }
  } finally {
    await checker.close();
  }

  const complete = results.every((result) => result.complete) && !interrupted;
  if (settings.json) {
    io.stdout.write(
      `${JSON.stringify({ database: session.target.dialect, tables: results, complete, mismatches }, null, 2)}\n`,
    );
  } else {
    io.stdout.write(formatDemoSummary(results));
  }
  for (const mismatch of mismatches) io.stderr.write(`rowclaim demo: ${mismatch}\n`);
  if (interrupted) {
    io.stderr.write("rowclaim demo: interrupted.\n");
    return 130;
  }
  if (!complete) {
    const left = results.reduce((sum, result) => sum + result.jobs - result.handled - result.deadLettered, 0);
    io.stderr.write(
      `rowclaim demo: ${left} jobs were neither handled nor dead-lettered within ${settings.timeoutMs / 1000} s.${messages.lines.length > 0 ? " See the messages above." : ""}\n`,
    );
    return EXIT_FAILED;
  }
  if (mismatches.length > 0) return EXIT_FAILED;
  if (!settings.json) {
    const statusHint = session.temporary
      ? ""
      : ` Count them with: rowclaim status --url URL --table ${results.map((r) => r.table).join(",")}`;
    io.stdout.write(`\nEvery job was handled or dead-lettered.${statusHint}\n`);
    io.stdout.write(`${formatRateNote(settings.workMs)}\n`);
  }
  return EXIT_OK;
}

/**
 * What the summary's rows/s count: the demo's handlers sleep and fail on purpose, so it is not the
 * library's throughput (`rowclaim bench` measures that).
 */
export function formatRateNote(workMs: number): string {
  const work =
    workMs > 0
      ? `each handler sleeps up to ${workMs} ms on purpose (--work-ms ${workMs}, 0 for none)`
      : "handlers do no simulated work (--work-ms 0)";
  return [
    `rows/s is not rowclaim's throughput: ${work},`,
    "and about 11 % of jobs fail on purpose and wait out their retry backoff (20 to 200 ms).",
    "To measure throughput, run rowclaim bench.",
  ].join("\n");
}

/** The demo's summary: one line per table and a total. */
export function formatDemoSummary(results: readonly DemoTableResult[]): string {
  const rows = results.map((result) => [
    result.table,
    result.form,
    String(result.jobs),
    String(result.handled),
    String(result.retried),
    String(result.deadLettered),
    formatSeconds(result.wallMs),
    formatPerSecond(result.handled + result.deadLettered, result.wallMs),
  ]);
  const sum = (pick: (result: DemoTableResult) => number): number =>
    results.reduce((total, result) => total + pick(result), 0);
  const wall = Math.max(0, ...results.map((result) => result.wallMs));
  rows.push([
    "total",
    "",
    String(sum((r) => r.jobs)),
    String(sum((r) => r.handled)),
    String(sum((r) => r.retried)),
    String(sum((r) => r.deadLettered)),
    formatSeconds(wall),
    formatPerSecond(
      sum((r) => r.handled + r.deadLettered),
      wall,
    ),
  ]);
  return `\n${formatTextTable(["table", "form", "jobs", "handled", "retried", "dead-lettered", "wall time", "rows/s"], rows)}`;
}
