/**
 * The startup probes on a single MariaDB/MySQL server: what they find, that they are cached per
 * driver, that they can be skipped, and the database clock the clock-skew check reads.
 */
import { ack, createBroker, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { createMysqlDriver } from "../src/index.js";
import { mysqlUrl, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(4);

function description(form: "rowLock" | "advisory" | "lease", name: string) {
  return {
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
    },
    extraColumns: ["account"],
    ...(form === "advisory" ? { advisoryLock: `${name}-{account}` } : {}),
  };
}

async function createTable(form: "rowLock" | "advisory" | "lease") {
  const name = uniqueName(`probe_${form}`);
  return db.tables.create(
    description(form, name),
    `CREATE TABLE \`${name}\` (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL, attempt INT NOT NULL DEFAULT 1, run_at DATETIME(6) NULL, account VARCHAR(64) NULL${form === "lease" ? ", locked_until DATETIME NULL" : ""}) ENGINE=InnoDB`,
  );
}

describe("on a single server the startup probes find advisory locks and row locks that exclude", () => {
  it("an advisory table's subscribe reports advisoryLock and no cluster; a row lock table with a row reports skipLocked", async () => {
    const advisory = await createTable("advisory");
    const rowLock = await createTable("rowLock");
    const driver = createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 4 });
    const broker = createBroker({ driver, logger: silentLogger });
    expect(driver.detected()).toEqual({});
    await broker.subscribe(advisory, () => ack());
    expect(driver.detected()).toMatchObject({ multiMaster: false, advisoryLock: true });
    // The row lock probe needs a row to lock: an empty table leaves it for later.
    const publisher = createBroker({ driver: db.driver, logger: silentLogger });
    await publisher.publish(rowLock, { n: 1 }, { values: { account: "a" } });
    await broker.subscribe(rowLock, () => new Promise(() => {}));
    expect(driver.detected()).toMatchObject({ skipLocked: true });
    await broker.close({ timeout: 100 });
  });

  it("a skipped probe is not run and not reported", async () => {
    const advisory = await createTable("advisory");
    const driver = createMysqlDriver({
      url: await mysqlUrl(),
      connectionLimit: 4,
      skipProbes: ["multiMaster", "advisoryLock"],
    });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.subscribe(advisory, () => ack());
    expect(driver.detected()).toEqual({});
    await broker.close();
  });
});

describe("the driver reads the database clock for the clock-skew check", () => {
  it("databaseTime is the server's clock, within a second of this host's on one machine", async () => {
    const before = Date.now();
    const time = await db.driver.databaseTime();
    const after = Date.now();
    expect(time.getTime()).toBeGreaterThan(before - 1000);
    expect(time.getTime()).toBeLessThan(after + 1000);
  });

  it("a lease table subscribes with the check on (the host and the server share a clock)", async () => {
    const lease = await createTable("lease");
    const driver = createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 2 });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.subscribe(lease, () => ack());
    await broker.close();
  });
});
