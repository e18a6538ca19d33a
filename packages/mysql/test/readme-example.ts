// The usage example the README shows (the lines between the region markers), run by
// readme-example.test.ts so that it cannot drift.
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createMysqlDriver } from "@rowclaim/mysql";

/** Runs the README's example on table `name` and returns the payloads its handler saw. */
export async function readmeExample(url: string, name: string): Promise<unknown[]> {
  const sent: unknown[] = [];
  const send = async (payload: unknown) => void sent.push(payload);
  // #region usage
  const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" };
  const jobs = defineTable({ name, columns });
  const driver = createMysqlDriver({ url }); // or { pool }: a mysql2/promise pool made with timezone: "Z"
  await driver.pool.query({ sql: driver.schemaSql(jobs) }); // once, or in your migrations
  const broker = createBroker({ driver });
  await broker.subscribe(jobs, (delivery) => send(delivery.payload).then(() => ack()), { workers: 4 });
  await broker.publish(jobs, { to: "a@example.com" });
  // #endregion usage
  while (sent.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  await broker.close();
  return sent;
}
