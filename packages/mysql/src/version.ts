/**
 * The server's family and version, read from `VERSION()`, and the floor each family needs.
 *
 * @module
 */
import { ServerTooOldError } from "@rowclaim/core";

/** Which server speaks: the SQL differs between them where noted in `sql.ts`. */
export type ServerFamily = "mysql" | "mariadb";

/** A parsed `VERSION()`. */
export interface ServerVersion {
  readonly family: ServerFamily;
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** The text the server reported. */
  readonly text: string;
}

/** The first release of each family the driver accepts: the first that skips locked rows. */
export const versionFloors: Readonly<Record<ServerFamily, readonly [number, number, number]>> = Object.freeze(
  {
    mysql: [8, 0, 1],
    mariadb: [10, 6, 0],
  },
);

/**
 * Parses a `VERSION()` string: `8.0.36`, `10.11.19-MariaDB-0+deb12u1`, and MariaDB's old
 * replication form `5.5.5-10.6.12-MariaDB`. Throws when the text holds no version number.
 */
export function parseServerVersion(text: string): ServerVersion {
  const family: ServerFamily = /mariadb/i.test(text) ? "mariadb" : "mysql";
  const body = family === "mariadb" ? text.replace(/^5\.5\.5-/, "") : text;
  const match = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(body.trim());
  if (match === null) throw new Error(`Cannot read a server version from "${text}".`);
  return Object.freeze({
    family,
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3] ?? 0),
    text,
  });
}

/** Whether `version` is at or above its family's floor. */
export function meetsFloor(version: ServerVersion): boolean {
  const [major, minor, patch] = versionFloors[version.family];
  if (version.major !== major) return version.major > major;
  if (version.minor !== minor) return version.minor > minor;
  return version.patch >= patch;
}

/** Refuses a server below its family's floor with `ServerTooOldError`, naming the family, the version and the floor. */
export function assertFloor(version: ServerVersion, table: string): void {
  if (meetsFloor(version)) return;
  const family = version.family === "mariadb" ? "MariaDB" : "MySQL";
  const floor = `${family} ${versionFloors[version.family].join(".")}`;
  throw new ServerTooOldError(
    `Table "${table}": the server is ${family} ${version.major}.${version.minor}.${version.patch} ("${version.text}"), older than ${floor}, the first release that skips locked rows (FOR UPDATE SKIP LOCKED), which every claim form of @rowclaim/mysql needs. Upgrade the server to ${floor} or later.`,
    { serverVersion: version.text, floor, table },
  );
}
