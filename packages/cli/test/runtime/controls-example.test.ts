import { join } from "node:path";
import { createBroker, type Delivery, defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, test } from "vitest";
import { controlsExample } from "../examples/controls.js";
import { tempDir, uniquePrefix } from "../support.js";
import { waitFor } from "./support.js";

describe("the core README's controls example", () => {
  test("the paused group is read back, resumed, and the rate-limited subscription sends every row", async () => {
    const driver = createSqliteDriver({ filename: join(tempDir(), "controls.db") });
    const emails = defineTable({
      name: uniquePrefix("ex_controls"),
      columns: { id: "id", payload: "payload", group: "queue", lockedUntil: "locked_until" },
    });
    driver.database.exec(driver.schemaSql(emails));
    const broker = createBroker({ driver });
    try {
      const sent: Delivery[] = [];
      await broker.publishMany(emails, [{ payload: 1 }, { payload: 2 }]);
      const state = await controlsExample(broker, emails, async (delivery) => {
        sent.push(delivery);
      });
      expect(state).toEqual({ table: emails.name, paused: false, pausedGroups: ["bulk"], rates: [] });
      await waitFor("both rows to be sent", () => sent.length === 2);
      expect((await broker.controlState(emails)).rates[0]).toMatchObject({ per: "table", limit: 50 });
    } finally {
      await broker.close();
    }
  });
});
