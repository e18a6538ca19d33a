// The `settled` event's durations on the in-memory driver. A delivery reads the clock only where
// someone wants its durations (instrumentation, a `settled` listener, debug logging); a listener
// added while a delivery runs still gets that delivery's durations, measured from its claim's end
// (no later than its start): never less than what the handler took.
import { performance } from "node:perf_hooks";
import { ack, type SettledEvent } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, it } from "vitest";
import { pause, waitFor } from "../src/wait.js";
import { deferred, setUp } from "./memory-setup.js";

const table = (name: string) => ({ name, columns: { id: "id", payload: "payload", attempt: "attempt" } });

/** Holds the handler for `ms` of the machine's clock, and returns how long it measured. */
async function heldFor(ms: number): Promise<number> {
  const start = performance.now();
  await pause(ms);
  return performance.now() - start;
}

describe("the settled event's durations", () => {
  it("with a listener from the start: each is at least what the handler took, the whole at least the handler's", async () => {
    const t = setUp(table("durations_listened"));
    const broker = t.broker();
    const settled: SettledEvent[] = [];
    broker.on("settled", (event) => settled.push(event));
    await broker.publish(t.table, "held");
    let took = 0;
    await broker.subscribe(t.table, async () => {
      took = await heldFor(5);
      return ack();
    });
    await drainTable(broker, t.table);
    await broker.close();
    expect(settled).toHaveLength(1);
    const [event] = settled;
    expect(event?.handlerMs).toBeGreaterThanOrEqual(took);
    expect(event?.durationMs).toBeGreaterThanOrEqual(event?.handlerMs ?? Number.NaN);
  });

  it("with the listener added while the handler runs: that delivery's durations are there too", async () => {
    const t = setUp(table("durations_late"));
    const broker = t.broker();
    await broker.publish(t.table, "held");
    const started = deferred();
    const gate = deferred();
    let took = 0;
    const subscription = await broker.subscribe(t.table, async () => {
      const start = performance.now();
      started.resolve();
      await gate.promise;
      took = performance.now() - start;
      return ack();
    });
    await started.promise;
    const settled: SettledEvent[] = [];
    broker.on("settled", (event) => settled.push(event));
    await pause(5);
    gate.resolve();
    await waitFor("the row acked", () => subscription.stats.acked === 1);
    await drainTable(broker, t.table);
    await broker.close();
    expect(settled).toHaveLength(1);
    const [event] = settled;
    expect(event?.outcome).toBe("ack");
    expect(Number.isFinite(event?.durationMs)).toBe(true);
    expect(event?.handlerMs).toBeGreaterThanOrEqual(took);
    expect(event?.durationMs).toBeGreaterThanOrEqual(event?.handlerMs ?? Number.NaN);
  });
});
