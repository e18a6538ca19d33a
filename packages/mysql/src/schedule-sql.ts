/**
 * The SQL of the MySQL/MariaDB schedule ledger (`rowclaim_schedule_ticks`).
 *
 * @module
 */
import { SCHEDULE_LEDGER_TABLE, type ScheduleLedgerStatements } from "@rowclaim/core/driver";
import { quoteTable } from "./sql.js";

/** The ledger table's reference in database `schema` (the connection's when `undefined`). */
function ledgerRef(schema: string | undefined): string {
  return quoteTable(SCHEDULE_LEDGER_TABLE, schema);
}

/** The ledger table's `CREATE TABLE IF NOT EXISTS` (names compared byte for byte, as table names are). */
export function scheduleLedgerSchemaSql(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${ledgerRef(schema)} (
  \`table_name\` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`schedule_name\` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`tick_ms\` BIGINT NOT NULL,
  \`published_at\` DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (\`table_name\`, \`schedule_name\`, \`tick_ms\`)
) ENGINE=InnoDB;
`;
}

/** The ledger's statements in `schema` (`exists`: database or NULL, ledger name; `prune`: table, schedule, before, table, schedule). */
export function scheduleLedgerSql(schema: string | undefined): ScheduleLedgerStatements {
  const ref = ledgerRef(schema);
  const own = "`table_name` = ? AND `schedule_name` = ?";
  return {
    exists:
      "SELECT COUNT(*) AS present FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?",
    recordTick: `INSERT IGNORE INTO ${ref} (\`table_name\`, \`schedule_name\`, \`tick_ms\`) VALUES (?, ?, ?)`,
    lastTick: `SELECT MAX(\`tick_ms\`) AS tick_ms FROM ${ref} WHERE ${own}`,
    // MySQL cannot read the table a DELETE deletes from in a subquery, except through a derived table.
    prune: `DELETE FROM ${ref} WHERE ${own} AND \`tick_ms\` < ? AND \`tick_ms\` < (SELECT latest FROM (SELECT MAX(\`tick_ms\`) AS latest FROM ${ref} WHERE ${own}) AS newest)`,
    list: `SELECT \`schedule_name\`, MAX(\`tick_ms\`) AS last_tick_ms, COUNT(*) AS ticks FROM ${ref} WHERE \`table_name\` = ? GROUP BY \`schedule_name\` ORDER BY \`schedule_name\``,
  };
}
