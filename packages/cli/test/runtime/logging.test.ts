import { Writable } from "node:stream";
import { ack, defineTable, retry } from "@rowclaim/core";
import { pino } from "pino";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { leaseColumns, sqliteBroker, waitFor } from "./support.js";

interface PinoLine {
  readonly level: number;
  readonly msg: string;
  readonly err?: { readonly type: string; readonly message: string; readonly stack: string };
  readonly [field: string]: unknown;
}

/** A real pino logger writing JSON lines into `lines`. */
function pinoInto(lines: PinoLine[], level: string) {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  return pino({ level }, stream);
}

describe("a pino logger passed to createBroker as it is", () => {
  test("a handler's error reaches pino's output in err, with the error's cause", async () => {
    const lines: PinoLine[] = [];
    const name = uniquePrefix("pino_err");
    const jobs = defineTable({ name, columns: leaseColumns });
    const { broker } = sqliteBroker([jobs], { logger: pinoInto(lines, "info") });
    try {
      await broker.publish(jobs, { n: 1 });
      let calls = 0;
      await broker.subscribe(
        jobs,
        () => {
          calls += 1;
          if (calls === 1) {
            throw new Error("sending failed", { cause: new Error("SMTP 421 service not available") });
          }
          return ack();
        },
        { pollInterval: 20, backoff: { baseMs: 1, maxMs: 1 } },
      );
      await waitFor("the handler's error in the log", () => lines.some((line) => line.level === 50));
      const line = lines.find((entry) => entry.level === 50) as PinoLine;
      expect(line.msg).toContain("the handler threw");
      expect(line.err?.message).toContain("sending failed");
      expect(line.err?.stack).toContain("SMTP 421 service not available");
      expect(line.table).toBe(name);
      expect(line.attempt).toBe(1);
    } finally {
      await broker.close();
    }
  });

  test("at debug level, every claim and settlement is traced; at info level none is", async () => {
    const debugLines: PinoLine[] = [];
    const infoLines: PinoLine[] = [];
    const name = uniquePrefix("pino_debug");
    const jobs = defineTable({ name, columns: leaseColumns });
    for (const [lines, level] of [
      [debugLines, "debug"],
      [infoLines, "info"],
    ] as const) {
      const { broker } = sqliteBroker([jobs], { logger: pinoInto(lines, level) });
      try {
        await broker.publish(jobs, { n: 1 });
        let first = true;
        let settled = 0;
        broker.on("settled", () => {
          settled += 1;
        });
        await broker.subscribe(
          jobs,
          () => {
            if (first) {
              first = false;
              return retry();
            }
            return ack();
          },
          { pollInterval: 20 },
        );
        await waitFor("two settlements", () => settled === 2);
      } finally {
        await broker.close();
      }
    }
    const traces = debugLines.filter((line) => line.level === 20);
    expect(traces.filter((line) => line.msg.includes("claimed"))).toHaveLength(2);
    expect(traces.filter((line) => line.msg.includes("settled")).map((line) => line.outcome)).toEqual([
      "retry",
      "ack",
    ]);
    expect(infoLines.filter((line) => line.level === 20)).toEqual([]);
    // info: subscriptions starting and stopping
    expect(infoLines.filter((line) => line.level === 30).map((line) => line.msg)).toEqual([
      expect.stringContaining("subscription started"),
      expect.stringContaining("subscription stopped"),
    ]);
  });
});
