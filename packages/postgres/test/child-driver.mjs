// The driver a conformance crash test's child process makes: the built @rowclaim/postgres on
// the database the parent test uses (its harness sets ROWCLAIM_POSTGRES_URL; children inherit it),
// with LISTEN/NOTIFY on like the harness's own drivers.
import { createPostgresDriver } from "@rowclaim/postgres";

export function createDriver() {
  const url = process.env.ROWCLAIM_POSTGRES_URL;
  if (url === undefined || url === "") throw new Error("child-driver.mjs: ROWCLAIM_POSTGRES_URL is not set.");
  return createPostgresDriver({ url, max: 10, notify: true, applicationName: "rowclaim-child" });
}

// For the transactional handler tests: writes one side-table row with the client a transactional
// body receives (a pg client inside the delivery's transaction).
export async function insertSideRow(client, table, job, worker) {
  await client.query(`INSERT INTO "${table}" (job, worker) VALUES ($1, $2)`, [job, worker]);
}
