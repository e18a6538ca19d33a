/**
 * The advisory lock form logs a take that failed beside takes that worked (it goes on with the
 * rows already taken): the logged error is a rowclaim error with a stable code, never mysql2's.
 */
import { BrokerError, createBroker, type Logger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { newDriver, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

describe("a failed advisory take beside one that worked", () => {
  it("is logged with err, a rowclaim error (CONNECTION_LOST for errno 1927), not mysql2's own error", async () => {
    const name = uniqueName("take_fail");
    const table = await db.tables.create({
      name,
      columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
      extraColumns: ["k"],
      advisoryLock: `${name}{k}`,
    });
    const logged: Record<string, unknown>[] = [];
    const logger: Logger = { warn() {}, error: (_message, details) => logged.push({ ...details }) };
    const broker = createBroker({ driver: await newDriver(), logger });
    const [good, bad] = await broker.publishMany(table, [
      { payload: "good", values: { k: "1" } },
      { payload: "bad", values: { k: "2" } },
    ]);
    // The take of row `bad` (an UPDATE of its attempt) fails as a killed session would.
    await db.admin.query(
      `CREATE TRIGGER \`${name}_refuse\` BEFORE UPDATE ON \`${name}\` FOR EACH ROW BEGIN IF OLD.id = ${Number(bad)} THEN SIGNAL SQLSTATE '70100' SET MYSQL_ERRNO = 1927, MESSAGE_TEXT = 'Connection was killed'; END IF; END`,
    );
    const seen: unknown[] = [];
    try {
      await broker.subscribe(table, (delivery) => void seen.push(delivery.id), {
        workers: 2,
        pollInterval: 20,
      });
      await waitFor(() => seen.some((id) => String(id) === String(good)) && logged.length > 0);
      await broker.close();
      for (const details of logged) {
        expect(BrokerError.is(details.err), "a logged error is mysql2's own").toBe(true);
      }
      expect(logged.some((details) => BrokerError.is(details.err, "CONNECTION_LOST"))).toBe(true);
    } finally {
      await broker.close();
    }
  });
});
