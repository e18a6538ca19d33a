// What the conformance suite's child processes import to make the same driver.
import { createPostgresDriver } from "@rowclaim/postgres";

export function createDriver() {
  return createPostgresDriver({ url: process.env.ROWCLAIM_POSTGRES_URL, max: 10, notify: true });
}

// For the transactional handler tests: one side-table row, written with the client a
// transactional body receives.
export async function insertSideRow(client, table, job, worker) {
  await client.query(`INSERT INTO "${table}" (job, worker) VALUES ($1, $2)`, [job, worker]);
}
