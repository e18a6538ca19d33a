import { describe, expect, it } from "vitest";
import {
  type ConnectionSession,
  controlRowOf,
  decodeClaimedRow,
  firstRowPerKey,
  foundInWork,
  groupFilterOf,
  inWorkRowOf,
  ledgerSchedulesOf,
  onConnection,
  rowActionResultOf,
  storedRowOf,
} from "../src/driver-api.js";
import { defineTable } from "../src/index.js";

const rowLock = defineTable({ name: "jobs", columns: { id: "id", payload: "body", group: "queue" } });
const lease = defineTable({ name: "leased", columns: { id: "id", payload: "body", lockedUntil: "until" } });
const advisory = defineTable({
  name: "keyed",
  columns: { id: "id", payload: "body" },
  extraColumns: ["account"],
  advisoryLock: "a-{account}",
});

/** A scripted session that records what ran on it. */
function scripted(failRollback = false) {
  const steps: string[] = [];
  const session: ConnectionSession<string> = {
    acquire: async () => "c",
    begin: async () => steps.push("begin"),
    commit: async () => steps.push("commit"),
    rollback: async () => {
      steps.push("rollback");
      if (failRollback) throw new Error("gone");
    },
    release: (_connection, broken) => {
      steps.push(broken ? "release broken" : "release");
    },
  };
  return { session, steps };
}

describe("onConnection runs a short piece of work and always releases the connection", () => {
  it("a transaction commits when the work returns", async () => {
    const { session, steps } = scripted();
    const fail = (error: unknown) => error;
    await expect(onConnection(session, async () => 7, { transaction: true, fail })).resolves.toBe(7);
    expect(steps).toEqual(["begin", "commit", "release"]);
  });
  it("a failed work rolls back and throws the driver's error; a failed rollback releases the connection broken", async () => {
    const { session, steps } = scripted(true);
    const work = async () => {
      throw new Error("refused");
    };
    const fail = (error: unknown) => new Error(`normalised: ${(error as Error).message}`);
    await expect(onConnection(session, work, { transaction: true, fail })).rejects.toThrow(
      "normalised: refused",
    );
    expect(steps).toEqual(["begin", "rollback", "release broken"]);
  });
  it("without a transaction only the work runs", async () => {
    const { session, steps } = scripted();
    await onConnection(session, async () => undefined, { transaction: false, fail: (error) => error });
    expect(steps).toEqual(["release"]);
  });
});

describe("stored rows say what holds them in each form", () => {
  const claimed = (table: typeof rowLock | typeof lease | typeof advisory, row: Record<string, unknown>) =>
    decodeClaimedRow(table, { id: 1, body: "{}", ...row }, false);
  it("a row not in work has no holder", () => {
    expect(storedRowOf(rowLock, claimed(rowLock, {}), false)).not.toHaveProperty("holder");
  });
  it("a lease's holder is its expiry, read from epoch milliseconds, a Date or text", () => {
    const at = new Date(1_700_000_000_000);
    for (const until of [at.getTime(), at, at.toISOString()])
      expect(storedRowOf(lease, claimed(lease, { until }), true).holder).toEqual({
        kind: "lease",
        until: at,
      });
  });
  it("an advisory holder names the key and the session where known; a row lock's session is unknown", () => {
    expect(storedRowOf(advisory, claimed(advisory, {}), true, { key: "a-1", session: 42 }).holder).toEqual({
      kind: "advisoryKey",
      key: "a-1",
      session: "42",
    });
    expect(storedRowOf(advisory, claimed(advisory, {}), true, { key: "a-1", session: null }).holder).toEqual({
      kind: "advisoryKey",
      key: "a-1",
      session: null,
    });
    expect(storedRowOf(rowLock, claimed(rowLock, {}), true).holder).toEqual({
      kind: "rowLock",
      session: null,
    });
  });
});

describe("a row action's result splits the rows it saw", () => {
  const seen = [
    { id: 1, changed: true, key: "k" },
    { id: 2, changed: false, key: "k" },
    { id: 3, changed: true, key: null },
  ];
  it("by ids: changed and in-work ids in order, no keys", () => {
    expect(rowActionResultOf(seen, false)).toEqual({ changed: [1, 3], inWork: [2] });
  });
  it("by keys: also the distinct keys that matched", () => {
    expect(rowActionResultOf(seen, true)).toEqual({ changed: [1, 3], inWork: [2], keys: ["k"] });
  });
});

describe("status, control and ledger rows decode the same on every driver", () => {
  it("an in-work row keeps only the holder fields the database told", () => {
    const until = new Date(5);
    expect(inWorkRowOf(lease, { id: 1, grp: null, attempt: "2", lockedUntil: until, session: null })).toEqual(
      {
        id: 1,
        group: null,
        attempt: 2,
        holder: { form: "lease", lockedUntil: until },
      },
    );
    expect(inWorkRowOf(rowLock, { id: 2, grp: "a", attempt: null, session: 9 })).toEqual({
      id: 2,
      group: "a",
      holder: { form: "rowLock", session: "9" },
    });
  });
  it("an advisory key is listed once, with its first row", () => {
    const rows = [1, 2, 3].map((id) =>
      inWorkRowOf(advisory, { id, grp: null, attempt: null, key: id < 3 ? "x" : "y" }),
    );
    expect(firstRowPerKey(rows).map((row) => row.id)).toEqual([1, 3]);
  });
  it("a search for rows in work keeps the first rows up to its limit, and is capped where there were more", () => {
    const until = new Date(1_000);
    const leased = [1, 2, 3].map((id) =>
      inWorkRowOf(lease, { id, grp: null, attempt: null, lockedUntil: until }),
    );
    expect(foundInWork(lease, leased, 2)).toEqual({ rows: leased.slice(0, 2), capped: true });
    expect(foundInWork(lease, leased, 3)).toEqual({ rows: leased, capped: false });
    const keyed = [1, 2, 3].map((id) =>
      inWorkRowOf(advisory, { id, grp: null, attempt: null, key: id < 3 ? "x" : "y" }),
    );
    expect(foundInWork(advisory, keyed, 2).rows.map((row) => row.id)).toEqual([1]);
    expect(foundInWork(advisory, keyed, 3).rows.map((row) => row.id)).toEqual([1, 3]);
  });
  it("a group filter covers every group, none, or the one named", () => {
    expect(groupFilterOf(rowLock, undefined)).toBe("all");
    expect(groupFilterOf(rowLock, null)).toBe("none");
    expect(groupFilterOf(rowLock, "a")).toBe("named");
    expect(groupFilterOf(lease, "a")).toBe("all");
  });
  it("a control row reads booleans or 1/0 and nullable numbers", () => {
    const stored = {
      scope: "*",
      rate_window: "60000",
      rate_count: 3,
      rate_limit: null,
      rate_interval_ms: undefined,
    };
    for (const paused of [true, 1])
      expect(controlRowOf({ ...stored, paused })).toEqual({
        scope: "*",
        paused: true,
        rateWindow: 60000,
        rateCount: 3,
        rateLimit: null,
        rateIntervalMs: null,
      });
    expect(controlRowOf({ ...stored, paused: 0 }).paused).toBe(false);
  });
  it("ledger schedules decode their latest tick and count", () => {
    expect(ledgerSchedulesOf([{ schedule_name: "s", last_tick_ms: "1000", ticks: 2n }])).toEqual([
      { name: "s", lastTick: new Date(1000), ticks: 2 },
    ]);
  });
});
