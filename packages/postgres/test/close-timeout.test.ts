/**
 * `broker.close({ timeout })` while your own code holds a client of the driver's pool: the
 * pool cannot end until the client comes back, so close returns at its time limit and logs a
 * warning whose `err` is a `CloseTimeoutError` (code `CLOSE_TIMEOUT`) naming what was still open.
 */
import { ack, BrokerError, createBroker, type LogDetails, type Logger } from "@rowclaim/core";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver } from "../src/index.js";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;

beforeAll(async () => {
  db = await TestDb.open();
});

afterAll(async () => {
  await db.close();
});

describe("close while your code holds a client of the driver's pool", () => {
  it("close({ timeout }) returns and logs CLOSE_TIMEOUT; the pool ends once the client is returned", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_close_held")));
    const warnings: LogDetails[] = [];
    const logger: Logger = { warn: (_message, details) => warnings.push(details ?? {}), error: () => {} };
    const driver = createPostgresDriver({ url: db.url, max: 4 });
    const broker = createBroker({ driver, logger });
    await broker.subscribe(table, () => ack(), { pollInterval: 50 });
    const held = await (driver.pool as pg.Pool).connect();
    try {
      await broker.close({ timeout: 200 });
      const errors = warnings.map((details) => details.err);
      expect(errors.some((error) => BrokerError.is(error, "CLOSE_TIMEOUT"))).toBe(true);
    } finally {
      held.release();
    }
    // Returned, the client lets the pool end.
    const pool = driver.pool as pg.Pool;
    await waitFor(() => pool.ended && pool.totalCount === 0, { what: "the driver's pool to end" });
  });
});
