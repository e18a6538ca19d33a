import { describe, expect, it } from "vitest";
import { decodeClaimedRow } from "../src/driver-api.js";
import { defineTable } from "../src/index.js";

const full = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "body", attempt: "tries", group: "queue", headers: "meta" },
});
const bare = defineTable({ name: "bare", columns: { id: "id", payload: "body" } });
const bytes = defineTable({ name: "blobs", columns: { id: "id", payload: "body" }, payloadType: "bytes" });

describe("a claimed row reports the attempt as it stood before its claim", () => {
  it("subtracts the attempt a lease claim or advisory take already counted", () => {
    expect(decodeClaimedRow(full, { id: 1, body: "{}", tries: 2 }, true).attempt).toBe(1);
  });
  it("reports the column as read where the claim counted nothing (row lock, operations)", () => {
    expect(decodeClaimedRow(full, { id: 1, body: "{}", tries: 2 }, false).attempt).toBe(2);
  });
  it("reads a count the client returns as a string or a bigint", () => {
    expect(decodeClaimedRow(full, { id: 1, body: "{}", tries: "3" }, true).attempt).toBe(2);
    expect(decodeClaimedRow(full, { id: 1, body: "{}", tries: 3n }, false).attempt).toBe(3);
  });
  it("reports 1 on a table without an attempt column, and for a NULL attempt", () => {
    expect(decodeClaimedRow(bare, { id: 1, body: "{}" }, true).attempt).toBe(1);
    expect(decodeClaimedRow(full, { id: 1, body: "{}", tries: null }, true).attempt).toBe(1);
  });
});

describe("a claimed row decodes its payload, group and headers by the table", () => {
  it("parses JSON text and headers, and keeps the group", () => {
    const row = decodeClaimedRow(
      full,
      { id: 7, body: '{"to":"a"}', tries: 1, queue: "q", meta: '{"k":"v"}' },
      false,
    );
    expect(row).toMatchObject({ id: 7, payload: { to: "a" }, group: "q", headers: { k: "v" } });
  });
  it("reads a NULL group, a table without groups and a table without headers as null and {}", () => {
    expect(decodeClaimedRow(full, { id: 1, body: "1", queue: null, meta: null }, false)).toMatchObject({
      group: null,
      headers: {},
    });
    expect(decodeClaimedRow(bare, { id: 1, body: "1" }, false)).toMatchObject({ group: null, headers: {} });
  });
  it("reads a group the client returns as another type as its text", () => {
    expect(decodeClaimedRow(full, { id: 1, body: "1", queue: 42 }, false).group).toBe("42");
  });
  it("hands bytes back as a plain Uint8Array over the client's buffer", () => {
    const buffer = Buffer.from([1, 2, 3]);
    const { payload } = decodeClaimedRow(bytes, { id: 1, body: buffer }, false);
    expect(payload).toBeInstanceOf(Uint8Array);
    expect((payload as Uint8Array).constructor).toBe(Uint8Array);
    expect([...(payload as Uint8Array)]).toEqual([1, 2, 3]);
  });
});

describe("a claimed row keeps the columns the driver read", () => {
  it("freezes the record it was given as the row", () => {
    const columns = { id: 1, body: "2", tries: 1 };
    const row = decodeClaimedRow(full, columns, false);
    expect(row.row).toBe(columns);
    expect(Object.isFrozen(row.row)).toBe(true);
  });
  it("decodes a payload read apart from the row, and puts the decoded value into the row", () => {
    const row = decodeClaimedRow(full, { id: 1, body: { parsed: "by the client" } }, false, '"2"');
    expect(row.payload).toBe("2");
    expect(row.row.body).toBe("2");
  });
});
