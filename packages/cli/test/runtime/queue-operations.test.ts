// The core README's cancel, redrive and prune recipes, run on SQLite.
import { join } from "node:path";
import { createBroker, deadLetter, defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, test } from "vitest";
import { cancelExample, pruneExample, redriveExample } from "../examples/queue-operations.js";
import { tempDir, uniquePrefix } from "../support.js";
import { waitFor } from "./support.js";

describe("the core README's operations recipes", () => {
  test("cancel deletes a queued row, redrive sends dead rows back, prune finds nothing a week old", async () => {
    const driver = createSqliteDriver({ filename: join(tempDir(), "recipes.db") });
    const jobs = defineTable({
      name: uniquePrefix("ex_ops"),
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        group: "queue",
        processedAt: "processed_at",
        lockedUntil: "locked_until",
      },
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    });
    driver.database.exec(driver.schemaSql(jobs));
    const broker = createBroker({ driver });
    try {
      const [queued] = await broker.publishMany(jobs, [{ payload: 1, group: "later" }]);
      if (queued === undefined) throw new Error("no id");
      expect((await cancelExample(broker, jobs, queued)).changed).toEqual([queued]);

      await broker.publishMany(jobs, [
        { payload: 2, group: "work" },
        { payload: 3, group: "work" },
      ]);
      const subscription = await broker.subscribe(jobs, () => deadLetter(), {
        group: "work",
        pollInterval: 20,
      });
      const count = (where: string): number =>
        (
          driver.database.prepare(`SELECT count(*) AS n FROM "${jobs.name}" WHERE ${where}`).get() as {
            n: number;
          }
        ).n;
      await waitFor("both rows dead", () => count(`queue = 'dead'`) === 2);
      await subscription.stop();
      const log = console.log;
      console.log = () => undefined;
      try {
        const { page, result } = await redriveExample(broker, jobs);
        expect(page.rows.map((row) => row.state)).toEqual(["dead", "dead"]);
        expect(result.redriven).toBe(2);
      } finally {
        console.log = log;
      }
      expect(count(`queue IS NULL AND attempt = 1`)).toBe(2);
      expect(await pruneExample(broker, jobs)).toEqual({ ran: true, deleted: 0, batches: 1 });
    } finally {
      await broker.close();
    }
  });
});
