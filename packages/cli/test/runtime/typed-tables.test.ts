import {
  ack,
  BrokerError,
  defineTable,
  type FailedEvent,
  type LogDetails,
  type Logger,
  type StandardSchemaV1,
} from "@rowclaim/core";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { leaseColumns, sqliteBroker, waitFor } from "./support.js";

interface Email {
  readonly to: string;
}

/** A Standard Schema written by hand, as zod, valibot or arktype would give one. */
const emailSchema: StandardSchemaV1<Email> = {
  "~standard": {
    version: 1,
    vendor: "rowclaim-test",
    validate(value) {
      const to = typeof value === "object" && value !== null ? (value as { to?: unknown }).to : undefined;
      if (typeof to === "string" && to.includes("@")) return { value: { to } };
      return { issues: [{ message: "must be an email address", path: ["to"] }] };
    },
  },
};

function capturingLogger(): { logger: Logger; errors: [string, LogDetails | undefined][] } {
  const errors: [string, LogDetails | undefined][] = [];
  return {
    errors,
    logger: { warn() {}, error: (message, details) => void errors.push([message, details]) },
  };
}

describe("publish checks the payload with the table's Standard Schema", () => {
  test("a payload that fails the schema is refused with INVALID_ARGUMENT naming the path, and nothing is written", async () => {
    const name = uniquePrefix("schema_pub");
    const emails = defineTable({ name, columns: leaseColumns, payloadSchema: emailSchema });
    const { broker, driver } = sqliteBroker([emails]);
    try {
      let refused: unknown;
      try {
        await broker.publish(emails, { to: "not an address" });
      } catch (error) {
        refused = error;
      }
      expect(BrokerError.is(refused, "INVALID_ARGUMENT")).toBe(true);
      const issues = ((refused as Error).cause as { issues: StandardSchemaV1.Issue[] }).issues;
      expect(issues[0]?.path).toEqual(["to"]);
      expect((refused as Error).message).toContain("to: must be an email address");
      await broker.publish(emails, { to: "a@example.com" });
      const count = driver.database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number };
      expect(count.n).toBe(1);
    } finally {
      await broker.close();
    }
  });
});

describe("a claimed row whose payload fails the table's schema is not handed to the handler", () => {
  test("with a dead letter, it is dead-lettered at once and the issues are logged", async () => {
    const name = uniquePrefix("schema_dead");
    const description = {
      name,
      columns: leaseColumns,
      maxAttempts: 5,
      deadLetter: { group: "dead" },
    } as const;
    const untyped = defineTable(description);
    const emails = defineTable({ ...description, payloadSchema: emailSchema });
    const { logger, errors } = capturingLogger();
    const { broker, driver } = sqliteBroker([emails], { logger });
    try {
      await broker.publish(untyped, { to: 42 });
      await broker.publish(emails, { to: "b@example.com" });
      const handled: Email[] = [];
      const failed: FailedEvent[] = [];
      broker.on("failed", (event) => failed.push(event));
      await broker.subscribe(
        emails,
        (delivery) => {
          handled.push(delivery.payload);
          return ack();
        },
        { pollInterval: 20 },
      );
      await waitFor("the bad row to move to the dead letter", () => {
        const rows = driver.database.prepare(`SELECT queue FROM "${name}"`).all() as {
          queue: string | null;
        }[];
        return rows.length === 1 && rows[0]?.queue === "dead";
      });
      expect(handled).toEqual([{ to: "b@example.com" }]);
      expect(failed.map((event) => event.next)).toEqual(["deadLetter"]);
      expect(BrokerError.is(failed[0]?.error, "INVALID_ARGUMENT")).toBe(true);
      const logged = errors.find(([message]) => message.includes("payloadSchema"));
      expect(logged?.[1]?.issues).toEqual([{ message: "must be an email address", path: ["to"] }]);
      expect(BrokerError.is(logged?.[1]?.err, "INVALID_ARGUMENT")).toBe(true);
    } finally {
      await broker.close();
    }
  });

  test("without a dead letter, it is retried with backoff, its attempt counting up", async () => {
    const name = uniquePrefix("schema_retry");
    const untyped = defineTable({ name, columns: leaseColumns });
    const emails = defineTable({ name, columns: leaseColumns, payloadSchema: emailSchema });
    const { broker, driver } = sqliteBroker([emails], { logger: capturingLogger().logger });
    try {
      await broker.publish(untyped, { to: 42 });
      const failed: FailedEvent[] = [];
      broker.on("failed", (event) => failed.push(event));
      let handled = 0;
      await broker.subscribe(
        emails,
        () => {
          handled += 1;
        },
        {
          pollInterval: 20,
          backoff: { baseMs: 1, maxMs: 1 },
        },
      );
      await waitFor("two failed deliveries", () => failed.length >= 2);
      expect(failed.every((event) => event.next === "retry")).toBe(true);
      expect(failed.map((event) => event.attempt).slice(0, 2)).toEqual([1, 2]);
      expect(handled).toBe(0);
      const rows = driver.database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number };
      expect(rows.n).toBe(1);
    } finally {
      await broker.close();
    }
  });
});

describe("publish refuses at run time what JSON would change", () => {
  test("NaN, a Map and an undefined property are refused with INVALID_ARGUMENT and nothing is written", async () => {
    const name = uniquePrefix("json_refuse");
    const jobs = defineTable({ name, columns: leaseColumns });
    const { broker, driver } = sqliteBroker([jobs]);
    try {
      for (const payload of [Number.NaN, new Map([["a", 1]]), { cc: undefined }, { at: new Date(0) }]) {
        let refused: unknown;
        try {
          await broker.publish(jobs, payload);
        } catch (error) {
          refused = error;
        }
        expect(BrokerError.is(refused, "INVALID_ARGUMENT")).toBe(true);
      }
      const rows = driver.database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number };
      expect(rows.n).toBe(0);
    } finally {
      await broker.close();
    }
  });
});
