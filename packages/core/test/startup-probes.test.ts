import { describe, expect, it } from "vitest";
import { DecidedOnce, ProbeFindings, probeRowLocks, type StartupProbe } from "../src/driver-api.js";
import { defineTable } from "../src/index.js";

const lease = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
});
const rowLock = defineTable({ name: "rows", columns: { id: "id", payload: "payload" } });

describe("ProbeFindings", () => {
  const unsafe = (name: "skipLocked" | "listen"): StartupProbe => ({
    name,
    forms: ["rowLock"],
    safe: async () => false,
    refusal: (table) => `Table "${table.name}" is unsafe`,
  });

  it("refuses a table whose form a probe finds unsafe with PROBE_FAILED naming the probe", async () => {
    const findings = new ProbeFindings();
    await expect(findings.check(rowLock, [unsafe("skipLocked")])).rejects.toMatchObject({
      code: "PROBE_FAILED",
      probe: "skipLocked",
      table: "rows",
    });
  });

  it("runs no probe of another form, nor a skipped one", async () => {
    await new ProbeFindings().check(lease, [unsafe("skipLocked")]);
    await new ProbeFindings(["skipLocked"]).check(rowLock, [unsafe("skipLocked")]);
  });

  it("reports what was recorded", () => {
    const findings = new ProbeFindings();
    expect(findings.record("listen", true)).toBe(true);
    expect(findings.found("listen")).toBe(true);
    expect(findings.detected()).toEqual({ listen: true });
  });
});

describe("DecidedOnce", () => {
  it("keeps a decided result, runs again after an undecided one or a failure", async () => {
    const once = new DecidedOnce<boolean>();
    let runs = 0;
    const counted =
      <T>(value: T) =>
      async (): Promise<T> => {
        runs++;
        return value;
      };
    expect(await once.get(counted(undefined))).toBeUndefined();
    await expect(
      once.get(async () => {
        runs++;
        throw new Error("lost");
      }),
    ).rejects.toThrow("lost");
    expect(await once.get(counted(true))).toBe(true);
    expect(await once.get(counted(false))).toBe(true);
    expect(runs).toBe(3);
  });

  it("shares one run between callers at the same time", async () => {
    const once = new DecidedOnce<boolean>();
    let runs = 0;
    const run = async (): Promise<boolean> => {
      runs++;
      return true;
    };
    await Promise.all([once.get(run), once.get(run)]);
    expect(runs).toBe(1);
  });
});

describe("probeRowLocks", () => {
  const session = (over: Partial<Parameters<typeof probeRowLocks<string>>[0]> = {}) => {
    const released: [string, boolean][] = [];
    return {
      released,
      session: {
        acquire: async () => "a",
        second: async (): Promise<string | undefined> => "b",
        begin: async () => {},
        lockFirstRow: async (): Promise<{ id: unknown } | undefined> => ({ id: 1 }),
        skipsLocked: async () => true,
        rollback: async () => {},
        release: (connection: string, broken: boolean) => {
          released.push([connection, broken]);
        },
        refusedByServer: () => true,
        ...over,
      },
    };
  };

  it("is true where B skipped A's row, and gives both connections back", async () => {
    const { session: s, released } = session();
    expect(await probeRowLocks(s)).toBe(true);
    expect(released).toEqual([
      ["b", false],
      ["a", false],
    ]);
  });

  it("is undecided on an empty table or without a second connection", async () => {
    expect(await probeRowLocks(session({ lockFirstRow: async () => undefined }).session)).toBeUndefined();
    expect(await probeRowLocks(session({ second: async () => undefined }).session)).toBeUndefined();
  });

  it("is false where the server refuses the clause, and destroys A when its rollback fails", async () => {
    const { session: s, released } = session({
      skipsLocked: async () => {
        throw new Error("syntax");
      },
      rollback: async () => {
        throw new Error("gone");
      },
    });
    expect(await probeRowLocks(s)).toBe(false);
    expect(released).toContainEqual(["a", true]);
  });
});
