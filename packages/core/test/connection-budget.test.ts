import { describe, expect, it } from "vitest";
import { ConnectionBudget } from "../src/connection-budget.js";
import { BrokerError, defineTable, silentLogger } from "../src/index.js";

const table = defineTable({ name: "jobs", columns: { id: "id", payload: "payload" } });
const options = { logger: silentLogger, workers: 2 };

/** A claimer whose close is counted. */
function claimer(): { closes: number; close(): Promise<void> } {
  return {
    closes: 0,
    async close() {
      this.closes += 1;
    },
  };
}

describe("a driver's connection budget", () => {
  it("counts an open subscription's connections until its claimer closes, once", async () => {
    const budget = new ConnectionBudget();
    const opened = await budget.open(table, 10, options, async () => claimer());
    expect(budget.inUse).toBe(3);
    await opened.close();
    await opened.close();
    expect(budget.inUse).toBe(0);
    expect(opened.closes).toBe(2);
  });

  it("refuses a subscription the pool is too small for with DECLARATION, and opens nothing", async () => {
    const budget = new ConnectionBudget();
    let opens = 0;
    const refused = budget.open(table, 2, options, async () => {
      opens += 1;
      return claimer();
    });
    await expect(refused).rejects.toSatisfy((error) => BrokerError.is(error, "DECLARATION"));
    expect(opens).toBe(0);
    expect(budget.inUse).toBe(0);
  });

  it("counts nothing for a claimer that fails to open", async () => {
    const budget = new ConnectionBudget();
    const failed = budget.open(table, undefined, options, () => Promise.reject(new Error("no table")));
    await expect(failed).rejects.toThrow("no table");
    expect(budget.inUse).toBe(0);
  });
});
