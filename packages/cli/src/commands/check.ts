/**
 * `rowclaim check`: compares a live table with its description (the table `rowclaim schema`
 * describes with the same flags): missing table or columns, columns of the wrong type, a missing
 * claim-order index. Prints each difference and the statements that fix it; exits 1 on any
 * difference, so a CI step or a deploy can stop on it.
 *
 * @module
 */
import { openAdminConnection } from "../admin-connection.js";
import { stringFlag } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { schemaDriver } from "../connect.js";
import { checkTable, describeProblem } from "../table-check.js";
import { describeTarget, parseTarget } from "../target.js";
import { tableFromFlags, tableShapeFlags } from "./schema.js";

/** The `check` command. */
export const checkCommand: Command = {
  spec: {
    name: "check",
    summary: "compare a live table with its description; print the fixes; exit 1 on a difference",
    details: [
      "Describe the table with the flags `rowclaim schema` takes. Reports a missing table or column, a column",
      "of another type (by family: int4 and int8 agree), and a missing claim-order index, then prints the",
      "statements that fix them (`rowclaim schema --apply` runs them). Read-only.",
    ],
    flags: {
      url: {
        type: "string",
        value: "URL",
        required: true,
        description: "The database: postgres://…, mysql://…, sqlite:FILE or a file path.",
      },
      ...tableShapeFlags,
    },
    examples: [
      "rowclaim check --url postgres://localhost/app --table jobs",
      "rowclaim check --url app.db --table tasks --processed-at",
    ],
  },
  async run(flags, io) {
    const target = parseTarget(stringFlag(flags, "url") as string, "check");
    const table = tableFromFlags(flags, "check");
    const sql = await schemaDriver(target.dialect, (driver) => driver.schemaSql(table));
    const connection = await openAdminConnection(target, { readOnly: true });
    try {
      const result = await checkTable(connection, table.name, sql);
      if (result.problems.length === 0) {
        io.stdout.write(`table ${table.name} in ${describeTarget(target)} matches its description.\n`);
        return EXIT_OK;
      }
      for (const problem of result.problems) io.stdout.write(`${describeProblem(table.name, problem)}\n`);
      const statements = result.fixes.map((fix) => fix.sql).join("\n");
      io.stdout.write(`\nTo fix it, run (or use rowclaim schema --apply):\n${statements}\n`);
      if (result.fixes.some((fix) => fix.effect === "rewrites"))
        io.stdout.write(
          "(A column type change rewrites the table under an exclusive lock: `rowclaim schema --apply` runs it only with --allow-rewrite.)\n",
        );
      return EXIT_FAILED;
    } finally {
      await connection.close();
    }
  },
};
