/**
 * Mistakes made when setting the driver up, and a publish too large for the server: each is
 * refused with a stable code and a message naming the fix, at `createMysqlDriver()` where the
 * options show it, else at the first statement (a wrong password or database), and a statement
 * over `max_allowed_packet` before it is sent.
 */
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import type { PublishRow } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import { createMysqlDriver, type MysqlDriverOptions } from "../src/index.js";
import type { QueryableLike } from "../src/pool-like.js";
import { publishRows } from "../src/publish.js";
import { parseServerVersion } from "../src/version.js";
import { mysqlUrl, readAll, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(2);

const shape = (name: string, payloadType: "json" | "bytes" = "json") => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt" },
  payloadType,
});

describe("createMysqlDriver refuses options it does not take", () => {
  it("an unknown key fails with INVALID_ARGUMENT", () => {
    const options = {
      url: "mysql://root@127.0.0.1/test",
      connectionLimt: 3,
    } as unknown as MysqlDriverOptions;
    expect(() => createMysqlDriver(options)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("acquireTimeoutMs of 0 fails with INVALID_ARGUMENT, as on every driver", () => {
    expect(() => createMysqlDriver({ url: "mysql://root@127.0.0.1/test", acquireTimeoutMs: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });

  it("a pool that is not a mysql2 pool, and no pool or url, fail with INVALID_ARGUMENT", () => {
    const notAPool = { pool: {} } as unknown as MysqlDriverOptions;
    expect(() => createMysqlDriver(notAPool)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => createMysqlDriver({ url: "" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("createMysqlDriver refuses a malformed connection URL", () => {
  it.each(["mysqll//nope", "postgres://postgres@127.0.0.1/test", "127.0.0.1:3306/test"])(
    "%s fails with INVALID_ARGUMENT",
    (url) => {
      expect(() => createMysqlDriver({ url })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    },
  );
});

describe("a connection the server refuses is reported with a code naming the cause", () => {
  async function urlWith(change: (url: URL) => void): Promise<string> {
    const url = new URL(await mysqlUrl());
    change(url);
    return url.toString();
  }

  it("a wrong password fails publish and subscribe with AUTHENTICATION", async () => {
    const table = await db.tables.create(shape(uniqueName("auth")));
    const url = await urlWith((u) => {
      u.password = "rowclaim-wrong-password";
    });
    const broker = createBroker({ driver: createMysqlDriver({ url }), logger: silentLogger });
    try {
      await expect(broker.publish(table, 1)).rejects.toMatchObject({ code: "AUTHENTICATION" });
      await expect(broker.subscribe(table, () => undefined)).rejects.toMatchObject({
        code: "AUTHENTICATION",
      });
    } finally {
      await broker.close();
    }
  });

  it("a database that does not exist fails publish and subscribe with UNKNOWN_DATABASE, not SCHEMA", async () => {
    const table = await db.tables.create(shape(uniqueName("nodb")));
    const url = await urlWith((u) => {
      u.pathname = "/rowclaim_no_such_database";
    });
    const broker = createBroker({ driver: createMysqlDriver({ url }), logger: silentLogger });
    try {
      await expect(broker.publish(table, 1)).rejects.toMatchObject({ code: "UNKNOWN_DATABASE" });
      await expect(broker.subscribe(table, () => undefined)).rejects.toMatchObject({
        code: "UNKNOWN_DATABASE",
      });
    } finally {
      await broker.close();
    }
  });
});

describe("a publish over max_allowed_packet is refused before it is sent", () => {
  const table = defineTable(shape("jobs", "bytes"));
  const row = (payload: Uint8Array): PublishRow => ({
    payload,
    group: null,
    runAt: new Date(),
    priority: null,
    headers: null,
    values: {},
  });

  it("bytes whose statement would be over the packet limit fail with INVALID_ARGUMENT and send nothing", async () => {
    const sent: string[] = [];
    const client: QueryableLike = {
      query: async (options: unknown) => {
        sent.push(String((options as { sql?: unknown }).sql ?? options));
        return [[], []];
      },
    };
    const server = {
      version: parseServerVersion("10.11.8-MariaDB"),
      autoIncrementIncrement: 1,
      maxAllowedPacket: 1024,
    };
    // 600 bytes travel as 1,200 hexadecimal digits.
    await expect(publishRows(client, server, table, [row(new Uint8Array(600))])).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    expect(sent).toEqual([]);
  });

  it("a bytes payload of half the server's max_allowed_packet fails with INVALID_ARGUMENT and writes nothing", async () => {
    const created = await db.tables.create(shape(uniqueName("packet"), "bytes"));
    const [rows] = await db.admin.query("SELECT @@max_allowed_packet AS max");
    const max = Number((rows as { max: number }[])[0]?.max);
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    await expect(broker.publish(created, new Uint8Array(Math.ceil(max / 2) + 1))).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    expect(await readAll(db.admin, created)).toEqual([]);
    // The driver's connections are still usable.
    await broker.publish(created, new Uint8Array([1, 2, 3]));
    expect(await readAll(db.admin, created)).toHaveLength(1);
  });
});

describe("publish inside the caller's transaction checks the transaction", () => {
  it("a connection that never began a transaction is refused with INVALID_ARGUMENT and writes nothing", async () => {
    const table = await db.tables.create(shape(uniqueName("notx")));
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    const connection = await db.admin.getConnection();
    try {
      await expect(broker.publish(table, 1, { client: connection })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      // With autocommit off the session is always inside a transaction.
      await connection.query("SET autocommit = 0");
      await broker.publish(table, 2, { client: connection });
      await connection.query("ROLLBACK");
      await connection.query("SET autocommit = 1");
    } finally {
      connection.release();
    }
    expect(await readAll(db.admin, table)).toEqual([]);
  });
});
