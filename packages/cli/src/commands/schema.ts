/**
 * `rowclaim schema`: prints the recommended `CREATE TABLE` and claim-order index of a table, as
 * the dialect's driver writes it (`driver.schemaSql`); with `--apply --url`, creates the table
 * (or adds what an existing one lacks) in the database. Running it again changes nothing.
 *
 * @module
 */
import type { ClaimFormName, PayloadType, TableDefinition } from "@rowclaim/core";
import { openAdminConnection } from "../admin-connection.js";
import { booleanFlag, type FlagSpec, type ParsedFlags, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { schemaDriver } from "../connect.js";
import { writeLedgerSchema } from "../schedule-ledger-schema.js";
import { checkTable, describeAdvice, describeProblem } from "../table-check.js";
import { configFlag, tablesFor } from "../table-source.js";
import { defaultKey, formNames, standardTable } from "../tables.js";
import { type Dialect, describeTarget, dialects, parseTarget, type Target } from "../target.js";

/** The flags that describe a table of the standard layout, shared by `schema` and `check`. */
export const tableShapeFlags: Readonly<Record<string, FlagSpec>> = Object.freeze({
  table: {
    type: "string",
    value: "NAME",
    description:
      "The table's name (with a config module: the one of its tables to use; default every table).",
  },
  form: {
    type: "string",
    value: "FORM",
    choices: formNames,
    defaultText: "lease",
    description: "The claim form the table takes.",
  },
  key: {
    type: "string",
    value: "TEMPLATE",
    defaultText: '"<table>:{queue}"',
    description: "Advisory form: the key template; placeholders naming new columns add them.",
  },
  "payload-type": {
    type: "string",
    value: "TYPE",
    choices: ["json", "text", "bytes"],
    defaultText: "json",
    description: "How the payload is held.",
  },
  "processed-at": {
    type: "boolean",
    description: "Add processed_at: ack marks rows instead of deleting them.",
  },
  headers: { type: "boolean", description: "Add a headers column (a JSON map beside the payload)." },
  "unique-key": {
    type: "boolean",
    description: "Add job_key and its unique index (unique jobs; lease and advisory forms).",
  },
});

/** The table the shape flags describe. */
export function tableFromFlags(flags: ParsedFlags, command: string): TableDefinition {
  const name = stringFlag(flags, "table") as string;
  const form = stringFlag(flags, "form", "lease") as ClaimFormName;
  const key = stringFlag(flags, "key");
  if (key !== undefined && form !== "advisory") {
    throw new UsageError(
      `--key is the advisory form's key template; add --form advisory or leave --key out.`,
      command,
    );
  }
  return standardTable({
    name,
    form,
    payloadType: stringFlag(flags, "payload-type", "json") as PayloadType,
    processedAt: booleanFlag(flags, "processed-at"),
    headers: booleanFlag(flags, "headers"),
    uniqueKey: booleanFlag(flags, "unique-key"),
    ...(form === "advisory" ? { key: key ?? defaultKey(name) } : {}),
  });
}

/** The target and dialect `url` (`--url`, or the config's) and `--dialect` name; the URL alone gives both. */
export function targetFromFlags(
  flags: ParsedFlags,
  command: string,
  url: string | undefined = stringFlag(flags, "url"),
): { dialect: Dialect; target: Target | undefined } {
  const dialect = stringFlag(flags, "dialect") as Dialect | undefined;
  const target = url === undefined ? undefined : parseTarget(url, command);
  if (target !== undefined && dialect !== undefined && target.dialect !== dialect) {
    throw new UsageError(
      `--dialect ${dialect} does not match --url, which names ${target.dialect}.`,
      command,
    );
  }
  const chosen = dialect ?? target?.dialect;
  if (chosen === undefined) throw new UsageError("give --dialect, or --url to name the database.", command);
  return { dialect: chosen, target };
}

/** The `schema` command. */
export const schemaCommand: Command = {
  spec: {
    name: "schema",
    summary: "print the recommended CREATE TABLE and index for a queue table",
    details: [
      "Columns: id, payload, attempt, run_at, priority, queue (the group), and with the flags below",
      "processed_at, headers, job_key (--unique-key), locked_until (lease form) and the columns an",
      "advisory key names.",
      "Nothing is executed: pipe the output into psql, mariadb or sqlite3. With a config module",
      "(--config, or rowclaim.config.mjs here), the tables are your own descriptions instead.",
    ],
    flags: {
      dialect: {
        type: "string",
        value: "DIALECT",
        choices: dialects,
        defaultText: "the --url's",
        description: "The database's SQL dialect (needed without --url).",
      },
      url: {
        type: "string",
        value: "URL",
        description: "The database: postgres://…, mysql://…, sqlite:FILE or a file path (with --apply).",
      },
      apply: {
        type: "boolean",
        description:
          "Create the table and index in the --url database, or add the columns and index an existing table lacks. Idempotent. Only adds: a column type change needs --allow-rewrite.",
      },
      "allow-rewrite": {
        type: "boolean",
        description:
          "With --apply: also change column types, which rewrites the table under an exclusive lock (a live queue stops while it runs).",
      },
      schedules: {
        type: "boolean",
        description:
          "Also the schedule ledger (rowclaim_schedule_ticks) broker.schedule needs, in each schema of the tables; with --apply, create it.",
      },
      config: configFlag,
      ...tableShapeFlags,
    },
    examples: [
      "rowclaim schema --dialect postgres --table jobs",
      "rowclaim schema --dialect mysql --table emails --form advisory --key 'emails-{account}'",
      "rowclaim schema --dialect sqlite --table tasks --processed-at | sqlite3 app.db",
      "rowclaim schema --apply --url postgres://localhost/app --table jobs",
      "rowclaim schema --apply --config rowclaim.config.mjs",
      "rowclaim schema --apply --schedules --url postgres://localhost/app --table jobs",
    ],
  },
  async run(flags, io) {
    const source = await tablesFor(flags, "schema", tableFromFlags);
    const { dialect, target } = targetFromFlags(
      flags,
      "schema",
      stringFlag(flags, "url") ?? source.config?.url,
    );
    const apply = booleanFlag(flags, "apply");
    if (apply && target === undefined)
      throw new UsageError("--apply needs --url: the database to create the table in.", "schema");
    if (booleanFlag(flags, "allow-rewrite") && !apply)
      throw new UsageError("--allow-rewrite goes with --apply.", "schema");
    const schemas = await schemaDriver(dialect, (driver) =>
      source.tables.map((table) => ({
        table,
        sql: driver.schemaSql(table),
        offered: driver.capabilities.forms.includes(table.form),
        driverName: driver.name,
      })),
    );
    let exitCode = EXIT_OK;
    for (const { table, sql, offered, driverName } of schemas) {
      if (apply && target !== undefined) {
        const code = await applySchema(target, table, sql, booleanFlag(flags, "allow-rewrite"), io);
        if (code !== EXIT_OK) exitCode = code;
        continue;
      }
      io.stdout.write(sql.endsWith("\n") ? sql : `${sql}\n`);
      if (!offered) {
        io.stderr.write(
          `rowclaim schema: note: the ${driverName} driver does not offer the ${table.form} form; subscribing to ${table.name} will fail.\n`,
        );
      }
    }
    if (booleanFlag(flags, "schedules")) {
      const code = await writeLedgerSchema(dialect, apply ? target : undefined, source.tables, io);
      if (code !== EXIT_OK) exitCode = code;
    }
    return exitCode;
  },
};

/**
 * Creates the table (or adds what it lacks) and checks the result. Prints each statement it runs
 * on stdout. Changes nothing, and prints what it would run, where a fix needs more than a
 * statement (SQLite cannot change a column's type) or rewrites the table without `allowRewrite`.
 */
async function applySchema(
  target: Target,
  table: TableDefinition,
  sql: string,
  allowRewrite: boolean,
  io: Parameters<Command["run"]>[1],
): Promise<number> {
  const connection = await openAdminConnection(target);
  try {
    const before = await checkTable(connection, table.name, sql);
    if (before.problems.length === 0 && before.advice.length === 0) {
      io.stderr.write(
        `rowclaim schema: table ${table.name} in ${describeTarget(target)} already matches; nothing to do.\n`,
      );
      return EXIT_OK;
    }
    if (!before.fixable) {
      for (const problem of before.problems)
        io.stderr.write(`rowclaim schema: ${describeProblem(table.name, problem)}\n`);
      io.stdout.write(`${before.fixes.map((fix) => fix.sql).join("\n")}\n`);
      io.stderr.write(
        "rowclaim schema: not every difference can be fixed by a statement; nothing was changed.\n",
      );
      return EXIT_FAILED;
    }
    if (!allowRewrite && before.fixes.some((fix) => fix.effect === "rewrites")) {
      for (const problem of before.problems)
        io.stderr.write(`rowclaim schema: ${describeProblem(table.name, problem)}\n`);
      io.stdout.write(`${before.fixes.map((fix) => fix.sql).join("\n")}\n`);
      io.stderr.write(
        "rowclaim schema: these statements include a column type change, which rewrites the table under an exclusive lock; nothing was changed. Run them in a maintenance window, or add --allow-rewrite.\n",
      );
      return EXIT_FAILED;
    }
    for (const advice of before.advice)
      io.stderr.write(`rowclaim schema: ${describeAdvice(table.name, advice)}\n`);
    for (const fix of before.fixes) {
      io.stdout.write(`${fix.sql}\n`);
      await connection.execute(fix.sql);
    }
    const after = await checkTable(connection, table.name, sql);
    if (after.problems.length > 0) {
      for (const problem of after.problems)
        io.stderr.write(`rowclaim schema: ${describeProblem(table.name, problem)}\n`);
      return EXIT_FAILED;
    }
    io.stderr.write(`rowclaim schema: table ${table.name} in ${describeTarget(target)} is ready.\n`);
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}
