// The core README's "Exactly-once effects for writes to the same database" examples, one per claim
// form and one on SQLite, run against the real databases by test/runtime/transactional.test.ts.
import { ack, type Broker, BrokerError, defineTable } from "@rowclaim/core";
import type { MysqlDriver } from "@rowclaim/mysql";
import type { PostgresDriver } from "@rowclaim/postgres";
import type { SqliteDriver } from "@rowclaim/sqlite";

/** An order: what the examples' queues carry. */
export interface Order {
  readonly sku: string;
  readonly quantity: number;
}

/** Row lock form on PostgreSQL: the handler's insert runs in the claim's own open transaction. */
export async function rowLockExample(
  broker: Broker<PostgresDriver>,
  name: string,
  shipments: string,
): Promise<void> {
  // #region row-lock
  const orders = defineTable<Order>({ name, columns: { id: "id", payload: "payload" } }); // row lock form
  await broker.subscribe(
    orders,
    (delivery) =>
      // client: the pg.PoolClient whose transaction claimed the row, still open.
      delivery.transaction(async (client) => {
        await client.query(`INSERT INTO ${shipments} (order_id, sku) VALUES ($1, $2)`, [
          delivery.id,
          delivery.payload.sku,
        ]);
        return ack(); // the insert and the ack commit together, or neither does
      }),
    { transactional: true }, // refused at subscribe where the driver cannot do it
  );
  // #endregion row-lock
}

/** Lease form on MySQL/MariaDB: the insert and the fenced ack in one transaction of its own. */
export async function leaseExample(
  broker: Broker<MysqlDriver>,
  name: string,
  shipments: string,
): Promise<void> {
  // #region lease
  const orders = defineTable<Order>({
    name,
    columns: { id: "id", payload: "payload", lockedUntil: "locked_until" }, // lease form
  });
  await broker.subscribe(
    orders,
    async (delivery) => {
      try {
        // client: a mysql2 PoolConnection, in a transaction opened for this body.
        await delivery.transaction(async (client) => {
          await client.query(`INSERT INTO ${shipments} (order_id, sku) VALUES (?, ?)`, [
            delivery.id,
            delivery.payload.sku,
          ]);
          return ack(); // runs last, inside: only while the row still holds this delivery's lease
        });
      } catch (error) {
        // The lease was taken over: the insert was rolled back, the new owner writes its own.
        if (!BrokerError.is(error, "LEASE_LOST")) throw error;
      }
    },
    { transactional: true },
  );
  // #endregion lease
}

/** Advisory lock form on PostgreSQL: the transaction runs on the delivery's own connection, the key held. */
export async function advisoryExample(
  broker: Broker<PostgresDriver>,
  name: string,
  ledger: string,
): Promise<void> {
  // #region advisory
  const payments = defineTable<{ cents: number }, Record<string, string>, "account">({
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt" },
    extraColumns: ["account"],
    advisoryLock: `${name}-{account}`, // one account's payments one at a time
  });
  await broker.subscribe(
    payments,
    (delivery) =>
      // client: the pg.PoolClient whose session holds the account's advisory lock.
      delivery.transaction(async (client) => {
        await client.query(`INSERT INTO ${ledger} (payment_id, cents) VALUES ($1, $2)`, [
          delivery.id,
          delivery.payload.cents,
        ]);
        return ack(); // committed with the entry, then the key is unlocked
      }),
    { transactional: true },
  );
  // #endregion advisory
}

/** SQLite (lease form): a synchronous body in an IMMEDIATE transaction on the driver's database. */
export async function sqliteExample(
  broker: Broker<SqliteDriver>,
  name: string,
  receipts: string,
): Promise<void> {
  // #region sqlite
  const orders = defineTable<Order>({
    name,
    columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
  });
  await broker.subscribe(
    orders,
    (delivery) =>
      // db: the better-sqlite3 Database, inside BEGIN IMMEDIATE. No await: the body is synchronous.
      delivery.transaction((db) => {
        db.prepare(`INSERT INTO ${receipts} (order_id, quantity) VALUES (?, ?)`).run(
          String(delivery.id),
          delivery.payload.quantity,
        );
        return ack();
      }),
    { transactional: true },
  );
  // #endregion sqlite
}
