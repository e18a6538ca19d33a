// The driver a conformance crash test's child process makes: the built @rowclaim/postgres-js on
// the database the parent test uses (ROWCLAIM_POSTGRES_URL, inherited), with LISTEN/NOTIFY on.
import { createPostgresJsDriver } from "@rowclaim/postgres-js";

export function createDriver() {
  const url = process.env.ROWCLAIM_POSTGRES_URL;
  if (url === undefined || url === "") throw new Error("child-driver.mjs: ROWCLAIM_POSTGRES_URL is not set.");
  return createPostgresJsDriver({ url, max: 10, notify: true, applicationName: "rowclaim-child" });
}

// For the transactional handler tests: writes one side-table row with the client a transactional
// body receives (the reserved postgres.js connection inside the delivery's transaction).
export async function insertSideRow(client, table, job, worker) {
  await client.unsafe(`INSERT INTO "${table}" (job, worker) VALUES ($1, $2)`, [job, worker]);
}
