/**
 * `rowclaim status`: what a queue table holds now, per group — due, delayed, in work (by the
 * form's own means: row locks held, unexpired leases, advisory keys held), dead, processed, the
 * oldest due row's age, and what is paused — and, with `--in-work`, what holds each row in work.
 * Read-only; the counts are core's `readQueueStatus` and `listInWork`, as the dashboard's.
 *
 * @module
 */
import {
  DEFAULT_STATUS_CAP,
  type Driver,
  formatCount,
  type InWorkRow,
  listInWork,
  type QueueStatus,
  readQueueStatus,
  type TableDefinition,
} from "@rowclaim/core";
import { openAdminConnection } from "../admin-connection.js";
import { booleanFlag, integerFlag, listFlag, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { findConfig, loadConfig, pickTables } from "../config.js";
import { createDriver } from "../connect.js";
import { describeLiveTable, liveColumns, type RenamedRole, TableNotFoundError } from "../status-table.js";
import { configFlag, urlFlag } from "../table-source.js";
import { formNames } from "../tables.js";
import { parseTarget } from "../target.js";
import { formatSeconds, formatTextTable } from "../text-table.js";

const roleFlags: Readonly<Record<string, RenamedRole>> = {
  "group-column": "group",
  "run-at-column": "runAt",
  "processed-at-column": "processedAt",
  "locked-until-column": "lockedUntil",
};

/** How many rows `--in-work` lists per table. */
const IN_WORK_ROWS = 100;

/** One table's status as `status` prints it. */
export interface StatusReport extends QueueStatus {
  /** The rows in work and what holds each (with `--in-work`). */
  readonly inWork?: readonly InWorkRow[];
}

/** The `status` command. */
export const statusCommand: Command = {
  spec: {
    name: "status",
    summary: "what a queue table holds now: due, delayed, in work, dead, processed, paused, by group",
    details: [
      "Read-only. In work is read by each form's own means: rows locked now (row lock: PostgreSQL's",
      "pg_locks; MariaDB/MySQL a SKIP LOCKED probe), unexpired leases (lease), keys held now (advisory:",
      "pg_locks, IS_USED_LOCK; SQLite: only this process's keys, so none from another process).",
      "--in-work lists the rows in work and what holds them (backend pid, connection id, lease expiry).",
      "A figure above --cap reads N+. Times are compared with this host's clock.",
      "With a config module (--config, or rowclaim.config.mjs here), the tables, columns and forms are",
      "your own descriptions: every table it lists unless --table picks some. Without one, columns are",
      "found by the names `rowclaim schema` writes (queue, run_at, processed_at, locked_until) or the",
      "--*-column flags, and the form is lease where the table has locked_until (else --form).",
    ],
    flags: {
      url: urlFlag,
      config: configFlag,
      table: {
        type: "string",
        value: "NAME",
        multiple: true,
        description: "The table(s) to read (required without a config module).",
      },
      form: {
        type: "string",
        value: "FORM",
        choices: formNames,
        defaultText: "lease with a locked_until column, else rowLock",
        description: "Without a config module: the claim form the table takes.",
      },
      key: {
        type: "string",
        value: "TEMPLATE",
        defaultText: '"<table>:{queue}"',
        description: "Without a config module, advisory form: the key template.",
      },
      "group-column": {
        type: "string",
        value: "COLUMN",
        defaultText: "queue",
        description: "The group column.",
      },
      "run-at-column": {
        type: "string",
        value: "COLUMN",
        defaultText: "run_at",
        description: "The runAt column.",
      },
      "processed-at-column": {
        type: "string",
        value: "COLUMN",
        defaultText: "processed_at",
        description: "The processedAt column.",
      },
      "locked-until-column": {
        type: "string",
        value: "COLUMN",
        defaultText: "locked_until",
        description: "The lockedUntil column.",
      },
      "dead-letter-group": {
        type: "string",
        value: "GROUP",
        description: "The dead-letter group (without a config module): its rows count as dead, not due.",
      },
      cap: {
        type: "integer",
        value: "N",
        defaultText: String(DEFAULT_STATUS_CAP),
        description: "Print a figure above N as N+.",
      },
      "in-work": {
        type: "boolean",
        description: `List the rows in work (up to ${IN_WORK_ROWS}) and what holds each.`,
      },
      json: { type: "boolean", description: "Print JSON instead of a table." },
    },
    examples: [
      "rowclaim status --config rowclaim.config.mjs --in-work",
      "rowclaim status --url postgres://localhost/app --table jobs",
      "rowclaim status --url ./jobs.db --table emails --table reports --json",
    ],
  },
  async run(flags, io) {
    const names: Partial<Record<RenamedRole, string>> = {};
    for (const [flag, role] of Object.entries(roleFlags)) {
      const value = stringFlag(flags, flag);
      if (value !== undefined) names[role] = value;
    }
    const cap = integerFlag(flags, "cap", DEFAULT_STATUS_CAP);
    if (cap < 1) throw new UsageError(`--cap must be at least 1 (got ${cap}).`, "status");
    const configFile = findConfig(stringFlag(flags, "config"));
    const config = configFile === undefined ? undefined : await loadConfig(configFile);
    const layoutFlags = [...Object.keys(roleFlags), "dead-letter-group", "form", "key"].filter(
      (flag) => flags.values[flag] !== undefined,
    );
    if (config !== undefined && layoutFlags.length > 0)
      throw new UsageError(
        `--${layoutFlags.join(", --")} describe a table in the standard layout; ${config.file} describes the tables. Leave the flag out.`,
        "status",
      );
    const given = listFlag(flags, "table");
    const described = config === undefined ? undefined : pickTables(config, given, "status");
    if (described === undefined && given.length === 0)
      throw new UsageError("status needs --table NAME, or a config module that lists the tables.", "status");
    const url = stringFlag(flags, "url") ?? config?.url;
    if (url === undefined) throw new UsageError("status needs --url URL (or a url in the config).", "status");
    const target = parseTarget(url, "status");
    const inWork = booleanFlag(flags, "in-work");
    // The command line's read-only connection first: it finds the tables (and refuses a SQLite file that does not exist).
    const admin = await openAdminConnection(target, { readOnly: true });
    const tables: TableDefinition[] = [];
    let exitCode = EXIT_OK;
    try {
      for (const name of described?.map((table) => table.name) ?? given) {
        try {
          const present = await liveColumns(admin, name);
          tables.push(
            described?.find((table) => table.name === name) ??
              describeLiveTable(
                {
                  name,
                  names,
                  form: stringFlag(flags, "form") as TableDefinition["form"] | undefined,
                  key: stringFlag(flags, "key"),
                  deadLetterGroup: stringFlag(flags, "dead-letter-group"),
                },
                present,
              ),
          );
        } catch (error) {
          if (!(error instanceof TableNotFoundError)) throw error;
          io.stderr.write(`rowclaim status: ${error.message}\n`);
          exitCode = EXIT_FAILED;
        }
      }
    } finally {
      await admin.close();
    }
    const reports: StatusReport[] = [];
    if (tables.length > 0) {
      const driver = await createDriver(target, { poolSize: 2 });
      try {
        for (const table of tables) reports.push(await readReport(driver, table, cap, inWork));
      } finally {
        await driver.close();
      }
    }
    if (booleanFlag(flags, "json")) io.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
    else io.stdout.write(reports.map((report) => formatStatus(report, target.dialect)).join("\n"));
    return exitCode;
  },
};

async function readReport(
  driver: Driver,
  table: TableDefinition,
  cap: number,
  inWork: boolean,
): Promise<StatusReport> {
  const now = new Date();
  const status = await readQueueStatus(driver, table, { cap, now });
  return inWork
    ? { ...status, inWork: await listInWork(driver, table, { limit: IN_WORK_ROWS, now }) }
    : status;
}

const formLabels: Readonly<Record<TableDefinition["form"], string>> = {
  rowLock: "row lock",
  lease: "lease",
  advisory: "advisory lock",
};

/** A table's status as text: one line per group, the notes, and the rows in work when listed. */
export function formatStatus(report: StatusReport, dialect?: string): string {
  const paused = report.controls?.paused === true ? ", paused" : "";
  let text = `${report.table} (${formLabels[report.form]} form${paused}; counts stop at ${report.cap})\n`;
  const groupName = (group: string | null): string => group ?? "(no group)";
  const rows = report.groups.map((group) => [
    groupName(group.group),
    formatCount(group.due),
    formatCount(group.delayed),
    formatCount(group.inWork),
    formatCount(group.dead),
    formatCount(group.processed),
    group.oldestDueAgeMs === null ? "-" : formatSeconds(group.oldestDueAgeMs),
    group.paused ? "yes" : "no",
  ]);
  if (rows.length === 0) text += "  (empty)\n";
  else
    text += formatTextTable(
      ["group", "due", "delayed", "in work", "dead", "processed", "oldest due", "paused"],
      rows,
      "  ",
    );
  const pausedAlone = (report.controls?.pausedGroups ?? []).filter(
    (group) => !report.groups.some((entry) => entry.group === group),
  );
  if (pausedAlone.length > 0) text += `  paused groups without rows: ${pausedAlone.join(", ")}\n`;
  for (const rate of report.controls?.rates ?? []) {
    const scope = rate.per === "table" ? "the table" : `group ${groupName(rate.group ?? null)}`;
    const wait = rate.waitMs > 0 ? `, claims wait ${formatSeconds(rate.waitMs)} for the next window` : "";
    text += `  rate limit of ${scope}: ${rate.limit} per ${formatSeconds(rate.intervalMs)}, ${rate.used} used${wait}\n`;
  }
  if (report.inWorkLimit !== undefined) text += `  note: ${report.inWorkLimit}.\n`;
  if (report.inWork !== undefined) {
    text += "  in work:\n";
    if (report.inWork.length === 0) text += "    (none)\n";
    else
      text += formatTextTable(
        ["id", "group", "attempt", "held by"],
        report.inWork.map((row) => [
          String(row.id),
          groupName(row.group),
          row.attempt === undefined ? "-" : String(row.attempt),
          holderText(row, dialect),
        ]),
        "    ",
      );
  }
  return text;
}

function holderText(row: InWorkRow, dialect: string | undefined): string {
  const { holder } = row;
  const parts: string[] = [];
  if (holder.lockedUntil !== undefined) parts.push(`lease until ${holder.lockedUntil.toISOString()}`);
  if (holder.key !== undefined) parts.push(`key ${JSON.stringify(holder.key)}`);
  if (holder.session !== undefined)
    parts.push(
      holder.session === "this process"
        ? "this process"
        : dialect === "postgres"
          ? `backend pid ${holder.session}`
          : dialect === "mysql"
            ? `connection ${holder.session}`
            : `session ${holder.session}`,
    );
  if (parts.length === 0)
    parts.push(holder.form === "rowLock" ? "a row lock (connection not known)" : formLabels[holder.form]);
  return parts.join(", ");
}
