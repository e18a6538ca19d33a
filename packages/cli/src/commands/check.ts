/**
 * `rowclaim check`: compares a live table with its description (the table `rowclaim schema`
 * describes with the same flags): missing table or columns, columns of the wrong type, a missing
 * claim-order index. Prints each difference and the statements that fix it; exits 1 on any
 * difference, so a CI step or a deploy can stop on it.
 *
 * @module
 */
import { openAdminConnection } from "../admin-connection.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { schemaDriver } from "../connect.js";
import { checkTable, describeAdvice, describeProblem } from "../table-check.js";
import { configFlag, tablesFor, urlFlag, urlFor } from "../table-source.js";
import { describeTarget, parseTarget } from "../target.js";
import { tableFromFlags, tableShapeFlags } from "./schema.js";

/** The `check` command. */
export const checkCommand: Command = {
  spec: {
    name: "check",
    summary: "compare a live table with its description; print the fixes; exit 1 on a difference",
    details: [
      "Describe the table with a config module (--config, or rowclaim.config.mjs here: your own table",
      "descriptions; every table it lists unless --table picks one) or with the flags `rowclaim schema`",
      "takes. Reports a missing table or column, a column of another type (by family: int4 and int8",
      "agree), and a missing claim-order index, then prints the statements that fix them (`rowclaim",
      "schema --apply` runs them). A PostgreSQL table without the recommended fillfactor is advised,",
      "not failed. Read-only.",
    ],
    flags: {
      url: urlFlag,
      config: configFlag,
      ...tableShapeFlags,
    },
    examples: [
      "rowclaim check --url postgres://localhost/app --table jobs",
      "rowclaim check --url app.db --table tasks --processed-at",
      "rowclaim check --config rowclaim.config.mjs",
    ],
  },
  async run(flags, io) {
    const source = await tablesFor(flags, "check", tableFromFlags);
    const target = parseTarget(urlFor(flags, source, "check"), "check");
    const schemas = await schemaDriver(target.dialect, (driver) =>
      source.tables.map((table) => ({ table, sql: driver.schemaSql(table) })),
    );
    const connection = await openAdminConnection(target, { readOnly: true });
    let exitCode = EXIT_OK;
    try {
      for (const { table, sql } of schemas) {
        const result = await checkTable(connection, table.name, sql);
        const advice = result.advice.map((item) => `${describeAdvice(table.name, item)}\n`).join("");
        const statements = result.fixes.map((fix) => fix.sql).join("\n");
        if (result.problems.length === 0) {
          io.stdout.write(`table ${table.name} in ${describeTarget(target)} matches its description.\n`);
          // Speed only: reported with its fix, without failing the check.
          if (advice !== "")
            io.stdout.write(
              `${advice}\nTo follow it, run (or use rowclaim schema --apply):\n${statements}\n`,
            );
          continue;
        }
        exitCode = EXIT_FAILED;
        for (const problem of result.problems) io.stdout.write(`${describeProblem(table.name, problem)}\n`);
        io.stdout.write(advice);
        io.stdout.write(`\nTo fix it, run (or use rowclaim schema --apply):\n${statements}\n`);
        if (result.fixes.some((fix) => fix.effect === "rewrites"))
          io.stdout.write(
            "(A column type change rewrites the table under an exclusive lock: `rowclaim schema --apply` runs it only with --allow-rewrite.)\n",
          );
      }
      return exitCode;
    } finally {
      await connection.close();
    }
  },
};
