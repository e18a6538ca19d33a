/**
 * The advisory lock form logs a take that failed beside takes that worked (it keeps the rows
 * already taken): the logged error is a rowclaim error with a stable code, never the native one.
 */
import { BrokerError, createBroker, type Logger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

const db = TestDb.forFile();

describe("a failed advisory take beside one that worked", () => {
  it("is logged with err, a rowclaim error (CONNECTION_LOST for the server's 57P01), not pg's own error", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_take_fail")));
    const logged: Record<string, unknown>[] = [];
    const logger: Logger = { warn() {}, error: (_message, details) => logged.push({ ...details }) };
    const broker = createBroker({ driver: db.driver(), logger });
    const [good, bad] = await broker.publishMany(table, [
      { payload: "good", values: { account: 1 } },
      { payload: "bad", values: { account: 2 } },
    ]);
    // The take of row `bad` (an UPDATE of its attempt) fails as a server shutting its session down would.
    const refuse = `${table.name}_refuse`;
    await db.query(
      `CREATE FUNCTION "${refuse}"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.id = ${Number(bad)} THEN RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01'; END IF; RETURN NEW; END $$`,
    );
    await db.query(
      `CREATE TRIGGER "${refuse}" BEFORE UPDATE ON "${table.name}" FOR EACH ROW EXECUTE FUNCTION "${refuse}"()`,
    );
    const seen: unknown[] = [];
    try {
      await broker.subscribe(table, (delivery) => void seen.push(delivery.id), {
        workers: 2,
        pollInterval: 20,
      });
      await waitFor(() => seen.some((id) => String(id) === String(good)) && logged.length > 0, {
        what: "the good row delivered and the failed take logged",
      });
      await broker.close();
      expect(logged.length).toBeGreaterThan(0);
      for (const details of logged) {
        expect(BrokerError.is(details.err), "a logged error is pg's own").toBe(true);
      }
      expect(logged.some((details) => BrokerError.is(details.err, "CONNECTION_LOST"))).toBe(true);
    } finally {
      await broker.close();
      await db.query(`DROP TABLE IF EXISTS "${table.name}"`);
      await db.query(`DROP FUNCTION IF EXISTS "${refuse}"()`);
    }
  });
});
