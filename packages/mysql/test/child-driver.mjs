// The driver a child process makes, for crash tests (the conformance suite's and this package's):
// the built @rowclaim/mysql against ROWCLAIM_MYSQL_URL (default: the local MariaDB).
import { createMysqlDriver } from "@rowclaim/mysql";

export function createDriver() {
  return createMysqlDriver({ url: process.env.ROWCLAIM_MYSQL_URL || "mysql://root@127.0.0.1:3306/test" });
}

// For the transactional handler tests: writes one side-table row with the client a transactional
// body receives (a mysql2 connection inside the delivery's transaction).
export async function insertSideRow(client, table, job, worker) {
  await client.query({ sql: `INSERT INTO \`${table}\` (job, worker) VALUES (?, ?)`, values: [job, worker] });
}
