// What the conformance suite's child processes import to make the same driver.
import { createPostgresDriver } from "@rowclaim/postgres";

export function createDriver() {
  return createPostgresDriver({ url: process.env.ROWCLAIM_POSTGRES_URL, max: 10, notify: true });
}
