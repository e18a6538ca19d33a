/**
 * `rowclaim schema --schedules`: the schedule ledger's `CREATE TABLE IF NOT EXISTS`
 * (`rowclaim_schedule_ticks`, which `broker.schedule` needs) in each schema the tables live in,
 * as the dialect's driver writes it (`driver.scheduleLedger.schemaSql`): printed, or run with
 * `--apply`. Running it again changes nothing.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { openAdminConnection } from "./admin-connection.js";
import { type CommandIO, EXIT_FAILED, EXIT_OK } from "./command.js";
import { schemaDriver } from "./connect.js";
import { type Dialect, describeTarget, type Target } from "./target.js";

/** Prints, or with `target` runs, the ledger's `CREATE TABLE` for every schema of `tables`. */
export async function writeLedgerSchema(
  dialect: Dialect,
  target: Target | undefined,
  tables: readonly TableDefinition[],
  io: CommandIO,
): Promise<number> {
  const schemas = [...new Set(tables.map((table) => table.schema))];
  const statements = await schemaDriver(dialect, (driver) =>
    driver.scheduleLedger === undefined
      ? undefined
      : schemas.map((schema) =>
          (driver.scheduleLedger as NonNullable<typeof driver.scheduleLedger>).schemaSql(schema),
        ),
  );
  if (statements === undefined) {
    io.stderr.write(`rowclaim schema: the ${dialect} driver keeps no schedule ledger.\n`);
    return EXIT_FAILED;
  }
  if (target === undefined) {
    for (const sql of statements) io.stdout.write(sql);
    return EXIT_OK;
  }
  const connection = await openAdminConnection(target);
  try {
    for (const sql of statements) {
      io.stdout.write(sql);
      await connection.execute(sql);
    }
  } finally {
    await connection.close();
  }
  io.stderr.write(`rowclaim schema: the schedule ledger in ${describeTarget(target)} is ready.\n`);
  return EXIT_OK;
}
