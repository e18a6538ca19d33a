// The clock every contender is timed by: it starts at the contender's first claim, not at its
// first handler call, and a drain that never marks its first claim has no figures.
import { describe, expect, it } from "vitest";
import { DrainRun } from "../src/contender.js";

const noOp = async (_payload: unknown): Promise<void> => {};

describe("a drain's clock", () => {
  it("starts when the contender marks its first claim, before any handler runs", async () => {
    const run = new DrainRun(noOp);
    run.claiming();
    const before = process.cpuUsage();
    // CPU spent between the first claim and the first handler call is the drain's.
    let spin = 0;
    while (process.cpuUsage(before).user < 2000) spin += 1;
    await run.handler({ spin });
    run.settled();
    const { ms, cpuMicros } = run.figures();
    expect(cpuMicros).toBeGreaterThanOrEqual(2000);
    expect(ms).toBeGreaterThan(0);
  });

  it("keeps the first mark when the first claim is marked again", async () => {
    const run = new DrainRun(noOp);
    run.claiming();
    const before = process.cpuUsage();
    while (process.cpuUsage(before).user < 2000);
    run.claiming();
    run.settled();
    expect(run.figures().cpuMicros).toBeGreaterThanOrEqual(2000);
  });

  it("refuses to settle a drain whose first claim was never marked", async () => {
    const run = new DrainRun(noOp);
    await run.handler({});
    expect(() => run.settled()).toThrow("the drain settled without marking its first claim");
    expect(() => run.figures()).toThrow("the drain did not report its last settlement");
  });

  it("resolves handled(n) once the handler has run n times", async () => {
    const run = new DrainRun(noOp);
    let resolved = false;
    const handled = run.handled(2).then(() => {
      resolved = true;
    });
    await run.handler({});
    await Promise.resolve();
    expect(resolved).toBe(false);
    await run.handler({});
    await handled;
    expect(resolved).toBe(true);
  });
});
