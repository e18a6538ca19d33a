import { describe, expect, it } from "vitest";
import { acquireWithin } from "../src/driver-api.js";
import { BrokerError } from "../src/index.js";

const wait = {
  waitMs: 20,
  driver: "rowclaim/test",
  poolSize: "the pool holds at most 2",
  enlarge: "Make the pool larger",
};

describe("a bounded connection wait", () => {
  it("returns the connection that comes within the bound", async () => {
    const given: string[] = [];
    await expect(acquireWithin(Promise.resolve("c1"), wait, (late) => given.push(late))).resolves.toBe("c1");
    expect(given).toEqual([]);
  });

  it("fails with CONNECTION_TIMEOUT past the bound, and gives a connection that comes later back", async () => {
    let arrive: (connection: string) => void = () => {};
    const pending = new Promise<string>((resolve) => {
      arrive = resolve;
    });
    const given: string[] = [];
    const error = await acquireWithin(pending, wait, (late) => given.push(late)).catch((e: unknown) => e);
    expect(BrokerError.is(error, "CONNECTION_TIMEOUT")).toBe(true);
    arrive("late");
    await pending;
    await Promise.resolve();
    expect(given).toEqual(["late"]);
  });

  it("passes a failed checkout on as it is", async () => {
    const failure = new Error("refused");
    await expect(acquireWithin(Promise.reject(failure), wait, () => {})).rejects.toBe(failure);
  });
});
