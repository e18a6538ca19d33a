/**
 * The PgBouncer the pooler tests go through: the URLs in ROWCLAIM_PGBOUNCER_SESSION_URL and
 * ROWCLAIM_PGBOUNCER_TRANSACTION_URL when set; otherwise `tooling/pgbouncer.sh` is run
 * (idempotent: it installs and starts PgBouncer on 127.0.0.1:6432 only where it does not
 * answer) and its two pools are used. A PgBouncer that cannot be started fails the test.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../../tooling/pgbouncer.sh", import.meta.url));

/** The session-mode and transaction-mode pool URLs. */
export interface PgBouncerUrls {
  readonly session: string;
  readonly transaction: string;
}

let started: PgBouncerUrls | undefined;

/** Starts PgBouncer where needed and returns its pools' URLs. */
export function pgbouncerUrls(): PgBouncerUrls {
  if (started !== undefined) return started;
  const session = process.env.ROWCLAIM_PGBOUNCER_SESSION_URL;
  const transaction = process.env.ROWCLAIM_PGBOUNCER_TRANSACTION_URL;
  if (session !== undefined && session !== "" && transaction !== undefined && transaction !== "") {
    started = { session, transaction };
    return started;
  }
  execFileSync("bash", [script], { stdio: ["ignore", "ignore", "inherit"], timeout: 300_000 });
  started = {
    session: "postgres://postgres@127.0.0.1:6432/test",
    transaction: "postgres://postgres@127.0.0.1:6432/test_tx",
  };
  return started;
}
