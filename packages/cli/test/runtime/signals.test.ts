import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createBroker, DEFAULT_SHUTDOWN_SIGNALS } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, test } from "vitest";
import { tempDir } from "../support.js";

const child = fileURLToPath(new URL("./signals-child.mjs", import.meta.url));

describe("createBroker({ handleSignals: true })", () => {
  test.each(["SIGTERM", "SIGINT"] as const)(
    "%s closes the broker (its subscriptions stop) and then ends the process by the signal",
    async (signal) => {
      const proc = spawn(process.execPath, [child, join(tempDir(), "queue.db")], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        proc.on("exit", (code, exitSignal) => resolve({ code, signal: exitSignal })),
      );
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes("ready\n")) resolve();
        });
        proc.on("exit", () => reject(new Error(`the child ended before it was ready: ${stderr}`)));
      });
      proc.kill(signal);
      const result = await exited;
      expect(stdout).toBe("ready\nstopped\n");
      expect(result).toEqual({ code: null, signal });
    },
  );

  test("closing the broker another way removes its signal listeners", async () => {
    const before = DEFAULT_SHUTDOWN_SIGNALS.map((signal) => process.listenerCount(signal));
    const broker = createBroker({
      driver: createSqliteDriver({ filename: join(tempDir(), "queue.db") }),
      handleSignals: true,
    });
    expect(DEFAULT_SHUTDOWN_SIGNALS.map((signal) => process.listenerCount(signal))).toEqual(
      before.map((count) => count + 1),
    );
    await broker.close();
    expect(DEFAULT_SHUTDOWN_SIGNALS.map((signal) => process.listenerCount(signal))).toEqual(before);
  });
});
