import { ack, createBroker, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { newDriver, quote, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture(4);

const shape = (name: string, payloadType: "json" | "text" | "bytes" = "json") => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", headers: "headers" },
  payloadType,
});

describe("publish inside the caller's transaction (client)", () => {
  it("the rows exist after the caller commits, and not after a rollback", async () => {
    const table = await db.tables.create(shape(uniqueName("tx")));
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const connection = await db.admin.getConnection();
    try {
      await connection.beginTransaction();
      const kept = await broker.publish(table, { kept: true }, { client: connection });
      expect(await readAll(db.admin, table)).toHaveLength(0);
      await connection.commit();
      await connection.beginTransaction();
      await broker.publishMany(table, [{ payload: { gone: 1 } }, { payload: { gone: 2 } }], {
        client: connection,
      });
      await connection.rollback();
      const rows = await readAll(db.admin, table);
      expect(rows.map((row) => String(row.id))).toEqual([String(kept)]);
    } finally {
      connection.release();
    }
  });

  it("a client that is not a mysql2 connection is refused with INVALID_ARGUMENT", async () => {
    const table = await db.tables.create(shape(uniqueName("badclient")));
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    await expect(broker.publish(table, 1, { client: { notAConnection: true } })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });
});

describe("publish returns ids in order and payloads round-trip intact", () => {
  it("ids of one multi-row publish are in order and match the rows", async () => {
    const table = await db.tables.create(shape(uniqueName("ids")));
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const ids = await broker.publishMany(
      table,
      Array.from({ length: 20 }, (_, n) => ({ payload: n })),
    );
    const rows = await readAll(db.admin, table);
    expect(rows.map((row) => String(row.id))).toEqual(ids.map(String));
    expect(rows.map((row) => JSON.parse(String(row.payload)))).toEqual(
      Array.from({ length: 20 }, (_, n) => n),
    );
  });

  const big = "x".repeat(1024 * 1024);
  const bytes = new Uint8Array(256).map((_, n) => n);
  it.each([
    [
      "a JSON object with nested values and unicode",
      "json",
      { nested: { list: [1, "two", null, true] }, unicode: "zoë 🚀 日本" },
    ],
    ["a 1 MB JSON string", "json", big],
    ["an empty text", "text", ""],
    ["a text with unicode and a NUL character", "text", "zoë 🚀 日本\u0000end"],
    ["a 1 MB text", "text", big],
    ["a payload of all 256 byte values", "bytes", bytes],
    ["an empty byte array", "bytes", new Uint8Array(0)],
    ["a payload of 1 MB of 0xFF bytes", "bytes", new Uint8Array(1024 * 1024).fill(255)],
  ] as const)(
    "%s in a %s table round-trips intact, with its headers",
    async (_what, payloadType, payload) => {
      const table = await db.tables.create(shape(uniqueName("payload"), payloadType));
      const broker = createBroker({ driver: await newDriver(3), logger: silentLogger });
      try {
        await broker.publish(table, payload, { headers: { trace: "t-1", "content-type": "ünïcode" } });
        const seen: { payload: unknown; headers: unknown }[] = [];
        await broker.subscribe(
          table,
          (delivery) => void seen.push({ payload: delivery.payload, headers: delivery.headers }),
          { pollInterval: 30 },
        );
        await waitFor(() => seen.length === 1, 20_000, "the delivery");
        const got = seen[0]?.payload;
        if (payloadType === "bytes") {
          expect(got).toBeInstanceOf(Uint8Array);
          expect(Buffer.from(got as Uint8Array).equals(Buffer.from(payload as Uint8Array))).toBe(true);
        } else {
          expect(got).toEqual(payload);
        }
        expect(seen[0]?.headers).toEqual({ trace: "t-1", "content-type": "ünïcode" });
      } finally {
        await broker.close();
      }
    },
  );
});

describe("startup checks name the table, the column and the statement", () => {
  it("a missing table stops subscribe with SCHEMA", async () => {
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const { defineTable } = await import("@rowclaim/core");
    const table = defineTable(shape(uniqueName("missing")));
    await expect(broker.subscribe(table, () => ack())).rejects.toMatchObject({
      code: "SCHEMA",
      table: table.name,
    });
  });

  it("a missing column stops subscribe with SCHEMA naming the column and the statement", async () => {
    const name = uniqueName("nocol");
    await db.tables.create(
      shape(name),
      `CREATE TABLE ${quote(name)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL, headers JSON NULL)`,
    );
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const { defineTable } = await import("@rowclaim/core");
    const error = await broker
      .subscribe(defineTable(shape(name)), () => ack())
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "SCHEMA", column: "attempt" });
    expect((error as { statement?: string }).statement).toContain("FOR UPDATE SKIP LOCKED");
  });

  it("a missing dead-letter table stops subscribe with SCHEMA", async () => {
    const name = uniqueName("deadmissing");
    const table = await db.tables.create({
      ...shape(name),
      maxAttempts: 2,
      deadLetter: { table: `${name}_dead` },
    });
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    await expect(broker.subscribe(table, () => ack())).rejects.toMatchObject({ code: "SCHEMA" });
  });

  it("publishing into a missing table fails with SCHEMA", async () => {
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const { defineTable } = await import("@rowclaim/core");
    await expect(broker.publish(defineTable(shape(uniqueName("nopub"))), 1)).rejects.toMatchObject({
      code: "SCHEMA",
    });
  });
});
