import { ack, deadLetter, defineTable, retryAfter, silentLogger } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { leaseColumns, sqliteBroker } from "./support.js";

describe("drainTable from @rowclaim/core/testing", () => {
  test("runs the table dry through its subscription and reports what each row settled as", async () => {
    const name = uniquePrefix("drain");
    const jobs = defineTable<string>({
      name,
      columns: leaseColumns,
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    });
    const { broker } = sqliteBroker([jobs], { logger: silentLogger });
    try {
      await broker.subscribe(
        jobs,
        (delivery) => {
          switch (delivery.payload) {
            case "bad":
              return deadLetter();
            case "later":
              return retryAfter(60_000);
            case "flaky":
              if (delivery.attempt === 1) throw new Error("flaky once");
              return ack();
            default:
              return ack();
          }
        },
        { pollInterval: 50, backoff: { baseMs: 0, maxMs: 0 }, workers: 2 },
      );
      const ids = await broker.publishMany(jobs, [
        { payload: "good" },
        { payload: "bad" },
        { payload: "later" },
        { payload: "flaky" },
      ]);
      const report = await drainTable(broker, jobs);
      expect(report.outcomes).toEqual({ ack: 2, deadLetter: 1, retryAfter: 2 });
      const [good, bad, later, flaky] = ids.map((id) => report.rows.get(String(id)));
      expect(good?.outcome).toBe("ack");
      expect(bad?.outcome).toBe("deadLetter");
      expect(later?.outcome).toBe("retryAfter");
      expect(flaky?.outcome).toBe("ack");
      expect(flaky?.attempt).toBe(2);
      const flakyFirst = report.deliveries.find(
        (delivery) => delivery.id === ids[3] && delivery.attempt === 1,
      );
      expect((flakyFirst?.error as Error | undefined)?.message).toBe("flaky once");
      // Drained: nothing due is left, a second drain settles nothing.
      expect((await drainTable(broker, jobs)).deliveries).toEqual([]);
    } finally {
      await broker.close();
    }
  });

  test("refuses a table the broker has no subscription to", async () => {
    const jobs = defineTable({ name: uniquePrefix("drain_none"), columns: leaseColumns });
    const { broker } = sqliteBroker([jobs], { logger: silentLogger });
    try {
      await expect(drainTable(broker, jobs)).rejects.toThrow(/no subscription/);
    } finally {
      await broker.close();
    }
  });
});
