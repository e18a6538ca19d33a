// The README's usage example: the README shows its `readme` region verbatim, and
// example.test.ts runs it, so the README cannot drift from working code.
import type { Broker } from "@rowclaim/core";
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";

/** Runs the README example on `filename`, calling `send` for each job; returns the broker to close. */
export async function runExample(
  filename: string,
  send: (payload: unknown) => Promise<void>,
): Promise<Broker> {
  // #region readme
  interface Email {
    to: string;
  }
  const jobs = defineTable<Email>({
    name: "jobs",
    columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
  });
  const driver = createSqliteDriver({ filename }); // for example "queue.db": WAL mode, closed with the broker
  driver.database.exec(driver.schemaSql(jobs));
  const broker = createBroker({ driver });
  await broker.subscribe(jobs, async (job) => {
    await send(job.payload);
    return ack();
  });
  await broker.publish(jobs, { to: "a@example.com" });
  // #endregion readme
  return broker;
}
