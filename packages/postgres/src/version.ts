/**
 * The server version floor: PostgreSQL 11 (`hashtextextended`) for the advisory lock form and
 * FIFO groups; any supported release otherwise.
 *
 * @module
 */
import { ServerTooOldError, type TableDefinition } from "@rowclaim/core";

/** The first `server_version_num` the advisory lock form and FIFO groups accept (PostgreSQL 11). */
export const HASH_FLOOR = 110000;

/** Parses `server_version_num` (`"150020"`); throws on anything that is not a positive whole number. */
export function parseServerVersionNum(value: unknown): number {
  const text = typeof value === "number" ? String(value) : typeof value === "string" ? value.trim() : "";
  if (!/^\d+$/.test(text) || Number(text) <= 0) {
    throw new Error(`rowclaim/postgres: cannot read the server version from ${JSON.stringify(value)}.`);
  }
  return Number(text);
}

/** Reads a version as people write it (`"15.2"`, `"9.6.24"`) as a `server_version_num`; throws on other text. */
export function versionNumFromText(text: string): number {
  const match = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(text.trim());
  if (match === null)
    throw new Error(`rowclaim/postgres: cannot read a server version from ${JSON.stringify(text)}.`);
  const [major, minor, patch] = [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
  return major >= 10 ? major * 10000 + minor : major * 10000 + minor * 100 + patch;
}

/** Formats a version number as people read it: 150020 → "15.20", 90624 → "9.6.24". */
export function formatVersionNum(num: number): string {
  if (num >= 100000) return `${Math.floor(num / 10000)}.${num % 10000}`;
  return `${Math.floor(num / 10000)}.${Math.floor(num / 100) % 100}.${num % 100}`;
}

/** The version floor a table needs, or `null` when its form and options take any version. */
export function versionFloorFor(table: TableDefinition): number | null {
  return table.form === "advisory" || table.fifo ? HASH_FLOOR : null;
}

/**
 * Refuses a server older than the table needs.
 *
 * @throws {ServerTooOldError} naming the table, the form, the server's version and the floor.
 */
export function assertServerVersion(table: TableDefinition, versionNum: number, versionText: string): void {
  const floor = versionFloorFor(table);
  if (floor === null || versionNum >= floor) return;
  const what =
    table.form === "advisory"
      ? "the advisory lock form"
      : `FIFO groups in the ${table.form === "lease" ? "lease" : "row lock"} form`;
  throw new ServerTooOldError(
    `Table "${table.name}": ${what} needs PostgreSQL ${formatVersionNum(floor)} or later (hashtextextended), and the server is ${versionText}. Upgrade the server, or use the ${table.form === "advisory" ? "row lock or lease form" : "table without fifo"}.`,
    { table: table.name, serverVersion: versionText, floor: formatVersionNum(floor) },
  );
}
