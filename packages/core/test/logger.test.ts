import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, test } from "vitest";
import type { Logger } from "../src/index.js";
import { brokerLogger, fromObjectFirst, isObjectFirstLogger } from "../src/logger.js";

/** A pino logger writing JSON lines into an array. */
function pinoInto(lines: Record<string, unknown>[], level = "debug") {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  return pino({ level }, stream);
}

async function flushed(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

describe("a pino logger passed to the broker receives each error in err, with its cause", () => {
  test("an error logged by the broker reaches pino's output with its message, stack and cause", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = brokerLogger(pinoInto(lines));
    const cause = new Error("connection reset by peer");
    logger.error('Table "jobs": a claim failed.', {
      err: new Error("claim failed", { cause }),
      table: "jobs",
    });
    await flushed();
    expect(lines).toHaveLength(1);
    const line = lines[0] as {
      msg: string;
      level: number;
      table: string;
      err: { message: string; stack: string };
    };
    expect(line.msg).toBe('Table "jobs": a claim failed.');
    expect(line.level).toBe(50);
    expect(line.table).toBe("jobs");
    expect(line.err.message).toContain("claim failed");
    expect(line.err.stack).toContain("connection reset by peer");
  });

  test("a driver's details with `error` are passed to pino as `err`", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = brokerLogger(pinoInto(lines));
    logger.warn("unlock failed", { error: new Error("lost connection") });
    await flushed();
    expect((lines[0] as { err: { message: string } }).err.message).toBe("lost connection");
    expect(lines[0]).not.toHaveProperty("error");
  });

  test("debug traces reach pino at debug level and are skipped above it", async () => {
    const lines: Record<string, unknown>[] = [];
    const debugLogger = brokerLogger(pinoInto(lines, "debug"));
    expect(debugLogger.isDebugEnabled()).toBe(true);
    debugLogger.debug?.("claimed 1 row", { table: "jobs" });
    const quiet = brokerLogger(pinoInto(lines, "info"));
    expect(quiet.isDebugEnabled()).toBe(false);
    quiet.debug?.("not written", {});
    await flushed();
    expect(lines.map((line) => line.msg)).toEqual(["claimed 1 row"]);
  });

  test("a pino logger is recognised by its child method; a console-style logger is not", () => {
    expect(isObjectFirstLogger(pinoInto([]))).toBe(true);
    const plain: Logger = { warn() {}, error() {} };
    expect(isObjectFirstLogger(plain)).toBe(false);
    expect(typeof fromObjectFirst(pinoInto([])).error).toBe("function");
  });
});

describe("a message-first logger keeps receiving message then details", () => {
  test("warn, error, info and debug reach it in its own order", () => {
    const calls: [string, string, unknown][] = [];
    const own: Logger = {
      warn: (message, details) => calls.push(["warn", message, details]),
      error: (message, details) => calls.push(["error", message, details]),
      debug: (message, details) => calls.push(["debug", message, details]),
    };
    const logger = brokerLogger(own);
    const err = new Error("x");
    logger.error("failed", { err });
    logger.debug?.("traced", { id: 1 });
    expect(logger.isDebugEnabled()).toBe(true);
    expect(calls).toEqual([
      ["error", "failed", { err }],
      ["debug", "traced", { id: 1 }],
    ]);
  });

  test("a driver's `error` detail reaches it as `err`, so every logged error is in err", () => {
    const calls: unknown[] = [];
    const own: Logger = { warn: (_, details) => calls.push(details), error() {} };
    const cause = new Error("cut");
    brokerLogger(own).warn("listening again", { error: cause, table: "jobs" });
    expect(calls).toEqual([{ err: cause, table: "jobs" }]);
  });

  test("without debug, debug traces are off", () => {
    expect(brokerLogger({ warn() {}, error() {} }).isDebugEnabled()).toBe(false);
    expect(brokerLogger(undefined).isDebugEnabled()).toBe(false);
  });
});
