/**
 * Mistakes made when setting the driver up: each is refused with a stable code and a message
 * naming the fix, at `createPostgresDriver()` where the options show it, else at the first
 * statement (a wrong user or database).
 */
import { createBroker, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver, type PostgresDriverOptions } from "../src/index.js";
import { describeTable, TestDb, uniqueName } from "./helpers.js";

describe("createPostgresDriver refuses options it does not take", () => {
  it("an unknown key fails with INVALID_ARGUMENT", () => {
    const options = { url: "postgres://127.0.0.1/test", maxx: 3 } as unknown as PostgresDriverOptions;
    expect(() => createPostgresDriver(options)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });

  it("an unknown key beside a pool fails with INVALID_ARGUMENT", () => {
    const pool = { query: async () => ({ rows: [] }), connect: async () => ({}) };
    const options = { pool, notfy: true } as unknown as PostgresDriverOptions;
    expect(() => createPostgresDriver(options)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });

  it("acquireTimeoutMs of 0 fails with INVALID_ARGUMENT", () => {
    expect(() => createPostgresDriver({ url: "postgres://127.0.0.1/test", acquireTimeoutMs: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("createPostgresDriver refuses a malformed connection URL", () => {
  it.each(["postgress//nope", "mysql://root@127.0.0.1/test", "127.0.0.1:5432/test"])(
    "%s fails with INVALID_ARGUMENT",
    (url) => {
      expect(() => createPostgresDriver({ url })).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
    },
  );

  it("postgres://, postgresql:// and socket:// URLs are taken", async () => {
    for (const url of [
      "postgres://127.0.0.1/test",
      "postgresql://u@localhost:5432/db",
      "socket:/var/run/postgresql?db=x",
    ]) {
      const driver = createPostgresDriver({ url });
      await driver.close();
    }
  });
});

describe("a connection the server refuses is reported with a code naming the cause", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await TestDb.open();
  });
  afterAll(async () => {
    await db.close();
  });

  function urlWith(change: (url: URL) => void): string {
    const url = new URL(db.url);
    change(url);
    return url.toString();
  }

  it("a user the server does not know fails publish and subscribe with AUTHENTICATION", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_auth")));
    const broker = createBroker({
      driver: createPostgresDriver({
        url: urlWith((url) => {
          url.username = "rowclaim_no_such_user";
        }),
      }),
      logger: silentLogger,
    });
    try {
      await expect(broker.publish(table, 1)).rejects.toMatchObject({ code: "AUTHENTICATION" });
      await expect(broker.subscribe(table, () => undefined)).rejects.toMatchObject({
        code: "AUTHENTICATION",
      });
    } finally {
      await broker.close();
    }
  });

  it("a database that does not exist fails publish and subscribe with UNKNOWN_DATABASE", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_nodb")));
    const broker = createBroker({
      driver: createPostgresDriver({
        url: urlWith((url) => {
          url.pathname = "/rowclaim_no_such_database";
        }),
      }),
      logger: silentLogger,
    });
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
