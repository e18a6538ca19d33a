// The README's "Publishing inside your transaction" example (its `transactional-publish` region),
// run by readme-example.test.ts so that it cannot drift.
import { type Broker, createBroker, defineTable } from "@rowclaim/core";
import { createPostgresDriver, type PostgresDriver } from "@rowclaim/postgres";
import pg from "pg";

/** Marks the order paid and publishes its email in one transaction, on a pool of the caller's own. */
export async function payOrder(
  url: string,
  orders: string,
  emailsTable: string,
  orderId: number,
): Promise<void> {
  // #region transactional-publish
  // Your own pg.Pool: the driver runs on it and never ends it; your code queries it as usual.
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const broker: Broker<PostgresDriver> = createBroker({ driver: createPostgresDriver({ pool }) });
  const emails = defineTable({ name: emailsTable, columns: { id: "id", payload: "payload" } });

  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`UPDATE ${orders} SET state = 'paid' WHERE id = $1`, [orderId]);
    await broker.publish(emails, { to: "ada@example.com" }, { client }); // in the same transaction
    await client.query("COMMIT"); // the email row exists only if this commits
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  } finally {
    client.release();
  }
  // #endregion transactional-publish
  await broker.close();
  await pool.end();
}
