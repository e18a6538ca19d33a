// The usage example the README shows (the lines between usage:start and usage:end), run by
// readme-example.test.ts so that it cannot drift.
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createPostgresJsDriver } from "@rowclaim/postgres-js";
import postgres from "postgres";

/** Creates the table, subscribes a handler, publishes one email, waits for it to be sent and closes. */
export async function sendEmails(
  url: string,
  tableName: string,
  send: (to: string) => Promise<void>,
): Promise<void> {
  // usage:start
  const sql = postgres(url, { max: 10 });
  const emails = defineTable({
    name: tableName,
    columns: { id: "id", payload: "payload", attempt: "attempt" },
  });
  const driver = createPostgresJsDriver({ sql });
  await sql.unsafe(driver.schemaSql(emails)); // or run it in a migration
  const broker = createBroker({ driver });
  await broker.subscribe<{ to: string }>(emails, async (delivery) => {
    await send(delivery.payload.to);
    return ack();
  });
  await broker.publish(emails, { to: "ada@example.com" });
  // usage:end
  for (;;) {
    const [row] = await sql.unsafe(`SELECT count(*)::int AS n FROM "${tableName}"`);
    if (row?.n === 0) break;
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }
  await broker.close();
  await sql.end();
}
