import { describe, expect, it } from "vitest";
import {
  BrokerError,
  type BrokerOptions,
  createBroker,
  type Driver,
  defineTable,
  MAX_LEASE_SECONDS,
  silentLogger,
  type TableDescription,
} from "../src/index.js";
import {
  describeValue,
  nearestKey,
  publishOptionKeys,
  subscribeOptionKeys,
  unknownKey,
} from "../src/options-check.js";

describe("an unknown option key names the nearest valid key", () => {
  const cases: [given: string, allowed: readonly string[], nearest: string | undefined][] = [
    ["priorty", publishOptionKeys, "priority"],
    ["runat", publishOptionKeys, "runAt"],
    ["worker", subscribeOptionKeys, "workers"],
    ["pollIntreval", subscribeOptionKeys, "pollInterval"],
    ["somethingElse", subscribeOptionKeys, undefined],
  ];
  for (const [given, allowed, nearest] of cases) {
    it(`"${given}" ${nearest === undefined ? "has no near key and lists the keys" : `suggests "${nearest}"`}`, () => {
      expect(nearestKey(given, allowed)).toBe(nearest);
      const found = unknownKey({ [given]: 1 }, allowed);
      expect(found?.key).toBe(given);
      expect(found?.advice).toContain(nearest === undefined ? "The keys are" : `\`${nearest}\``);
    });
  }

  it("known keys, even with undefined values, pass", () => {
    expect(unknownKey({ priority: undefined, group: "g" }, publishOptionKeys)).toBeUndefined();
  });
});

describe("a value of the wrong type is named by its type", () => {
  const cases: [value: unknown, named: string][] = [
    ["4", 'a string ("4")'],
    [2.5, "a number (2.5)"],
    [Number.NaN, "NaN"],
    [null, "null"],
    [undefined, "undefined"],
    [[1], "an array"],
    [{}, "an object"],
    [true, "a boolean (true)"],
    [new Date(Number.NaN), "an invalid Date"],
  ];
  for (const [value, named] of cases) {
    it(`${String(value)} is ${named}`, () => {
      expect(describeValue(value)).toBe(named);
    });
  }
});

describe("the longest lease", () => {
  it("is the largest whole-second lease whose half, in milliseconds, a Node timer holds", () => {
    expect(MAX_LEASE_SECONDS).toBe(4_294_967);
    expect((MAX_LEASE_SECONDS * 1000) / 2).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(((MAX_LEASE_SECONDS + 1) * 1000) / 2).toBeGreaterThan(2 ** 31 - 1);
  });
});

describe("createBroker refuses an unknown option", () => {
  it("a misspelled logger key fails with INVALID_ARGUMENT naming `logger`", () => {
    let caught: unknown;
    try {
      createBroker({ driver: {} as Driver, loger: silentLogger } as unknown as BrokerOptions);
    } catch (error) {
      caught = error;
    }
    expect(BrokerError.is(caught, "INVALID_ARGUMENT")).toBe(true);
    expect((caught as Error).message).toContain("`logger`");
  });
});

describe("defineTable refuses an unknown key", () => {
  it("a misspelled lease key fails with DECLARATION naming `lease`", () => {
    let caught: unknown;
    try {
      defineTable({
        name: "jobs",
        columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
        leese: 10,
      } as unknown as TableDescription);
    } catch (error) {
      caught = error;
    }
    expect(BrokerError.is(caught, "DECLARATION")).toBe(true);
    expect((caught as Error).message).toContain("`lease`");
  });
});
