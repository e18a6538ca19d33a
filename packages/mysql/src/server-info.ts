/**
 * Facts about the server, read once per driver: its family and version (the floor, the SQL
 * variants), `auto_increment_increment` (publish ids on MySQL) and `max_allowed_packet` (the
 * largest statement a publish may send).
 *
 * @module
 */
import { type QueryableLike, selectRows } from "./pool-like.js";
import { serverInfoSql } from "./sql.js";
import { parseServerVersion, type ServerVersion } from "./version.js";

/** What the driver knows about the server. */
export interface ServerInfo {
  readonly version: ServerVersion;
  readonly autoIncrementIncrement: number;
  /** The largest statement the server takes, in bytes (`@@max_allowed_packet`); `Infinity` when unknown. */
  readonly maxAllowedPacket: number;
}

/** Reads the server's version, auto-increment step and packet limit. */
export async function readServerInfo(client: QueryableLike): Promise<ServerInfo> {
  const rows = await selectRows(client, serverInfoSql, []);
  const row = rows[0] ?? [];
  return Object.freeze({
    version: parseServerVersion(String(row[0])),
    autoIncrementIncrement: Number(row[1] ?? 1) || 1,
    maxAllowedPacket: Number(row[3]) > 0 ? Number(row[3]) : Number.POSITIVE_INFINITY,
  });
}
