// The usage example the README shows (the lines of its `usage` region), run by
// readme-example.test.ts so that it cannot drift.
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";

/** Creates the table, subscribes a handler, publishes one email and closes. */
export async function sendEmails(
  url: string,
  tableName: string,
  send: (to: string) => Promise<void>,
): Promise<void> {
  // #region usage
  const columns = { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" };
  const emails = defineTable({ name: tableName, columns });
  const driver = createPostgresDriver({ url, max: 10 });
  await driver.pool.query({ text: driver.schemaSql(emails) }); // or run it in a migration
  const broker = createBroker({ driver });
  await broker.subscribe<{ to: string }>(
    emails,
    async (delivery) => {
      await send(delivery.payload.to);
      return ack();
    },
    { workers: 4 },
  );
  await broker.publish(emails, { to: "ada@example.com" });
  // #endregion usage
  await waitUntilEmpty(driver.pool, tableName);
  await broker.close();
}

async function waitUntilEmpty(
  pool: { query(config: { text: string }): Promise<{ rows: Record<string, unknown>[] }> },
  table: string,
): Promise<void> {
  for (;;) {
    const { rows } = await pool.query({ text: `SELECT count(*)::int AS n FROM "${table}"` });
    if (rows[0]?.n === 0) return;
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }
}
