import { describe, expect, it } from "vitest";
import type { DriverRowQuery, OperationsDriver, StoredRow } from "../src/driver-api.js";
import { type Driver, defineTable, rowDetail } from "../src/index.js";

const jobs = defineTable({ name: "jobs", columns: { id: "id", payload: "body", group: "queue" } });

const stored: StoredRow = {
  id: 7,
  payload: { to: "a" },
  attempt: 1,
  group: null,
  headers: {},
  row: { id: 7, body: '{"to":"a"}', queue: null },
  inWork: false,
};

/** A driver whose operations answer every listing with `rows`, recording the queries. */
function listingDriver(rows: readonly StoredRow[], detail?: OperationsDriver["detail"]) {
  const queries: DriverRowQuery[] = [];
  const unused = () => Promise.reject(new Error("not called"));
  const operations: OperationsDriver = {
    features: { holderSessions: false, pruneLock: "none" },
    act: unused,
    redrive: unused,
    prune: unused,
    lockPrune: unused,
    count: unused,
    async list(_table, query) {
      queries.push(query);
      return rows;
    },
    ...(detail === undefined ? {} : { detail }),
  };
  const driver = { name: "listing", open: unused, operations } as unknown as Driver;
  return { driver, queries };
}

describe("rowDetail over a driver without detail", () => {
  it("reads the row with one listing of its id, every state, no dead-letter group, one row", async () => {
    const { driver, queries } = listingDriver([stored]);
    const row = await rowDetail(driver, jobs, 7);
    expect(row?.id).toBe(7);
    expect(row?.state).toBe("due");
    expect(queries).toHaveLength(1);
    const [query] = queries;
    expect(query?.filter).toEqual({ ids: [7] });
    expect(query?.deadGroup).toBeNull();
    expect(query?.limit).toBe(1);
    expect(query?.state).toBeUndefined();
    expect(query?.after).toBeUndefined();
  });

  it("answers undefined when the listing finds no row", async () => {
    const { driver } = listingDriver([]);
    expect(await rowDetail(driver, jobs, 8)).toBeUndefined();
  });

  it("uses the driver's own detail where it has one", async () => {
    const { driver, queries } = listingDriver([], async () => stored);
    expect((await rowDetail(driver, jobs, 7))?.id).toBe(7);
    expect(queries).toHaveLength(0);
  });
});
