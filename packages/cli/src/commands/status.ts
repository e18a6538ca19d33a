/**
 * `rowclaim status`: counts of a queue table's rows by group: due, leased (in work in the lease
 * form), scheduled and processed. Read-only.
 *
 * @module
 */

import { openAdminConnection } from "../admin-connection.js";
import { booleanFlag, listFlag, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { findConfig, loadConfig, pickTables } from "../config.js";
import { configFlag } from "../table-source.js";
import { readTableStatus, TableNotFoundError, type TableStatus } from "../table-status.js";
import { parseTarget } from "../target.js";
import { formatTextTable } from "../text-table.js";

const roleFlags = {
  "group-column": "group",
  "run-at-column": "runAt",
  "processed-at-column": "processedAt",
  "locked-until-column": "lockedUntil",
} as const;

/** The `status` command. */
export const statusCommand: Command = {
  spec: {
    name: "status",
    summary: "count a queue table's rows: due, leased, scheduled, processed, by group",
    details: [
      "Read-only. Columns are found by the names `rowclaim schema` writes (queue, run_at, processed_at,",
      "locked_until); name others with the --*-column flags. A role whose column the table lacks is",
      "not counted. Rows held by a row lock or an advisory lock are in work but count as due: only",
      "the lease form writes its claims into the row. Times are compared with this host's clock.",
      "With a config module (--config, or rowclaim.config.mjs here), the tables and their columns are",
      "your own descriptions: every table it lists unless --table picks some.",
    ],
    flags: {
      url: {
        type: "string",
        value: "URL",
        defaultText: "the config's url",
        description: "The database: postgres://…, mysql://…, sqlite:FILE or a file path.",
      },
      config: configFlag,
      table: {
        type: "string",
        value: "NAME",
        multiple: true,
        description: "The table(s) to count (required without a config module).",
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
      json: { type: "boolean", description: "Print JSON instead of a table." },
    },
    examples: [
      "rowclaim status --url postgres://localhost/app --table jobs",
      "rowclaim status --url ./jobs.db --table emails --table reports --json",
    ],
  },
  async run(flags, io) {
    const names: Record<string, string> = {};
    for (const [flag, role] of Object.entries(roleFlags)) {
      const value = stringFlag(flags, flag);
      if (value !== undefined) names[role] = value;
    }
    const configFile = findConfig(stringFlag(flags, "config"));
    const config = configFile === undefined ? undefined : await loadConfig(configFile);
    if (
      config !== undefined &&
      (Object.keys(names).length > 0 || flags.values["dead-letter-group"] !== undefined)
    )
      throw new UsageError(
        `the --*-column flags name columns of the standard layout; ${config.file} describes the tables' columns.`,
        "status",
      );
    const given = listFlag(flags, "table");
    // Each table with the role columns to count: the config's own names, or the flags' (standard) ones.
    const tables =
      config === undefined
        ? given.map((table) => ({
            table,
            names,
            standardNames: true,
            deadGroup: stringFlag(flags, "dead-letter-group"),
          }))
        : pickTables(config, given, "status").map((table) => ({
            table: table.name,
            names: table.columns,
            standardNames: false,
            deadGroup:
              table.deadLetter !== undefined && "group" in table.deadLetter
                ? table.deadLetter.group
                : undefined,
          }));
    if (tables.length === 0)
      throw new UsageError("status needs --table NAME, or a config module that lists the tables.", "status");
    const url = stringFlag(flags, "url") ?? config?.url;
    if (url === undefined) throw new UsageError("status needs --url URL (or a url in the config).", "status");
    const target = parseTarget(url, "status");
    const admin = await openAdminConnection(target, { readOnly: true });
    const results: TableStatus[] = [];
    let exitCode = EXIT_OK;
    try {
      for (const { table, names: columns, standardNames, deadGroup } of tables) {
        try {
          const options = deadGroup === undefined ? { standardNames } : { standardNames, deadGroup };
          results.push(await readTableStatus(admin, table, columns, new Date(), options));
        } catch (error) {
          if (!(error instanceof TableNotFoundError)) throw error;
          io.stderr.write(`rowclaim status: ${error.message}\n`);
          exitCode = EXIT_FAILED;
        }
      }
    } finally {
      await admin.close();
    }
    if (booleanFlag(flags, "json")) {
      io.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    } else {
      io.stdout.write(results.map(formatStatus).join("\n"));
    }
    return exitCode;
  },
};

/** A table's status as text: one line per group, and which columns were counted. */
export function formatStatus(status: TableStatus): string {
  const counted = Object.entries(status.columns)
    .map(([role, column]) => `${role}=${column}`)
    .join(", ");
  const header = `${status.table} (${counted === "" ? "no role columns found: every row counts as due" : counted})\n`;
  const rows = status.groups.map((group) => [
    group.group ?? (status.columns.group === undefined ? "(all)" : "(no group)"),
    String(group.total),
    String(group.due),
    String(group.leased),
    String(group.scheduled),
    String(group.processed),
    String(group.dead),
  ]);
  if (rows.length === 0) return `${header}  (empty)\n`;
  return (
    header +
    formatTextTable(["group", "total", "due", "leased", "scheduled", "processed", "dead"], rows, "  ")
  );
}
