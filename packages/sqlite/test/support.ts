/**
 * Shared test fixtures: temp database files, unique table names, waiting on conditions.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger, type TableDefinition, type TableDescription } from "@rowclaim/core";
import type { AdvisoryClaimer, LeaseClaimer, PublishRow } from "@rowclaim/core/driver";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll } from "vitest";
import { createSqliteDriver, type SqliteDriver } from "../src/index.js";
import type { HeldKey } from "../src/keys.js";

/** A temp directory with a database file path in it, removed by `remove()`. */
export function tempDatabaseFile(prefix = "rowclaim-sqlite-"): { file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { file: join(dir, "queue.db"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A table name unique to this test run. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString("hex")}`;
}

/** Opens a second connection of the test's own (WAL, like the driver). */
export function openConnection(file: string): Database.Database {
  const db = new Database(file, { timeout: 5000 });
  db.pragma("journal_mode = WAL");
  return db;
}

/** What {@link useSqliteFile} sets up for a test file. */
export interface SqliteFile {
  /** The database file, in a temp directory of the file's own. */
  readonly file: string;
  /** The test's own connection to the file; readable inside a test or a later hook. */
  readonly db: Database.Database;
  /** A new driver on the file, closed after the current test. */
  readonly driver: () => SqliteDriver;
  /** Closes `drivers` made otherwise (on another file, in memory) after the current test too. */
  readonly closeAfterTest: (...drivers: SqliteDriver[]) => void;
  /** Every row of `table`, read on the test's own connection, by id. */
  readonly rows: (table: TableDefinition) => Record<string, unknown>[];
  /** A claimer of `table` (no group) opened by a new driver; fails unless the table is a lease table. */
  readonly leaseClaimer: (table: TableDefinition) => Promise<LeaseClaimer>;
  /** As {@link SqliteFile.leaseClaimer}, for an advisory lock table; its tokens are the driver's keys held in the process. */
  readonly advisoryClaimer: (table: TableDefinition) => Promise<AdvisoryClaimer<HeldKey>>;
}

/**
 * Registers the hooks of a test file on a database file of its own: a temp file and the test's
 * own connection to it (opened in `beforeAll`), the drivers {@link SqliteFile.driver} made closed
 * after each test, and the connection closed and the file removed after the last test.
 */
export function useSqliteFile(): SqliteFile {
  const temp = tempDatabaseFile();
  let db: Database.Database | undefined;
  const drivers: SqliteDriver[] = [];
  beforeAll(() => {
    db = openConnection(temp.file);
  });
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((driver) => driver.close()));
  });
  afterAll(() => {
    db?.close();
    temp.remove();
  });
  const connection = (): Database.Database => {
    if (db === undefined)
      throw new Error("useSqliteFile: read the connection inside a test or a later hook.");
    return db;
  };
  const driver = (): SqliteDriver => {
    const made = createSqliteDriver({ filename: temp.file });
    drivers.push(made);
    return made;
  };
  const open = async (table: TableDefinition, form: "lease" | "advisory") => {
    const claimer = await driver().open(table, { group: null, logger: silentLogger });
    if (claimer.form !== form) throw new Error(`expected a ${form} claimer, got a ${claimer.form} one`);
    return claimer;
  };
  return {
    file: temp.file,
    get db() {
      return connection();
    },
    driver,
    closeAfterTest: (...made) => {
      drivers.push(...made);
    },
    rows: (table) =>
      connection().prepare(`SELECT * FROM "${table.name}" ORDER BY id`).all() as Record<string, unknown>[],
    leaseClaimer: async (table) => (await open(table, "lease")) as LeaseClaimer,
    advisoryClaimer: async (table) => (await open(table, "advisory")) as AdvisoryClaimer<HeldKey>,
  };
}

/**
 * A row as the driver's `publish` takes it (payload already encoded): no group, not scheduled, no
 * priority, no headers and no extra values, unless `fields` says otherwise.
 */
export function publishRow(
  payload: PublishRow["payload"],
  fields: Partial<Omit<PublishRow, "payload">> = {},
): PublishRow {
  return { payload, group: null, runAt: null, priority: null, headers: null, values: {}, ...fields };
}

/** The columns of the claim roles every form uses: id, payload, attempt, runAt, priority, group. */
export const claimColumns = Object.freeze({
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  priority: "priority",
  group: "queue",
});

/** A lease table description with every role. */
export function leaseTable(name: string, extra: Partial<TableDescription> = {}): TableDescription {
  return {
    name,
    columns: { ...claimColumns, lockedUntil: "locked_until", headers: "headers" },
    ...extra,
  };
}

/** Waits until `check` returns true, polling; fails after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = "condition",
): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (await check()) return;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
