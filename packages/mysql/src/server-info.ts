/**
 * Facts about the server, read once per driver.
 *
 * @module
 */
import { type QueryableLike, selectRows } from "./pool-like.js";
import { serverInfoSql } from "./sql.js";
import { parseServerVersion, type ServerVersion } from "./version.js";

/** What the driver knows about the server. */
export interface ServerInfo {
  readonly version: ServerVersion;
  /** `@@auto_increment_increment`: the step between the ids of one publish on MySQL. */
  readonly autoIncrementIncrement: number;
  /** The largest statement the server takes, in bytes (`@@max_allowed_packet`); `Infinity` when unknown. */
  readonly maxAllowedPacket: number;
}

/** Reads the server's version, auto-increment step and packet limit. */
export async function readServerInfo(client: QueryableLike): Promise<ServerInfo> {
  const [row = []] = await selectRows(client, serverInfoSql, []);
  return Object.freeze({
    version: parseServerVersion(String(row[0])),
    autoIncrementIncrement: Number(row[1] ?? 1) || 1,
    maxAllowedPacket: Number(row[3]) > 0 ? Number(row[3]) : Number.POSITIVE_INFINITY,
  });
}
