/**
 * Facts about the server, read once per driver: its family and version (the floor, the SQL
 * variants) and `auto_increment_increment` (publish ids on MySQL).
 *
 * @module
 */
import { type QueryableLike, selectRows } from "./client.js";
import { serverInfoSql } from "./sql.js";
import { parseServerVersion, type ServerVersion } from "./version.js";

/** What the driver knows about the server. */
export interface ServerInfo {
  readonly version: ServerVersion;
  readonly autoIncrementIncrement: number;
}

/** Reads the server's version and auto-increment step. */
export async function readServerInfo(client: QueryableLike): Promise<ServerInfo> {
  const rows = await selectRows(client, serverInfoSql, []);
  const row = rows[0] ?? [];
  return Object.freeze({
    version: parseServerVersion(String(row[0])),
    autoIncrementIncrement: Number(row[1] ?? 1) || 1,
  });
}
