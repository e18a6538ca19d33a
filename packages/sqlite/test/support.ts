/**
 * Shared test fixtures: temp database files, unique table names, waiting on conditions.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PublishRow, TableDescription } from "@rowclaim/core";
import Database from "better-sqlite3";

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
