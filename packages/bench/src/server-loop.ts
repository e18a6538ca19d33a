/**
 * The hand-written one-row loops on PostgreSQL and MariaDB/MySQL, one per form: the command
 * line's loops (`rowclaim/bench`, the very loops `rowclaim bench` runs), on the same table rowclaim's
 * contender of that form drains (laid out by the driver's `schemaSql`, filled through the broker).
 * One loop per worker, each on a connection of its own, one row a claim.
 *
 * @module
 */
import type { ClaimFormName } from "@rowclaim/core";
import { type HandWrittenLoop, openHandWrittenLoop } from "rowclaim/bench";
import { benchTable } from "./bench-table.js";
import type { Contender } from "./contender.js";
import { ServerTable } from "./rowclaim.js";

const statements: Record<ClaimFormName, string> = {
  lease:
    "one row a claim: WITH … FOR UPDATE SKIP LOCKED UPDATE … RETURNING (MariaDB: a transaction of SELECT … FOR UPDATE SKIP LOCKED and UPDATE), the handler, fenced DELETE",
  rowLock: "BEGIN, SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED, the handler, DELETE, COMMIT",
  advisory:
    "a read of due rows and their keys, a try-lock per key until one is granted, UPDATE attempt, the handler, DELETE, unlock",
};

/** The command line's hand-written loop of `form` on the server database at `url`. */
export function serverLoop(
  database: "postgres" | "mysql",
  url: string,
  form: ClaimFormName,
  maxWorkers: number,
): Contender {
  const table = benchTable(`rowclaim_wsbench_loop_${form.toLowerCase()}`, form);
  const server = new ServerTable(database, url, maxWorkers + 2, table);
  let loop: HandWrittenLoop | undefined;
  return {
    id: `loop-${database === "postgres" ? "pg" : "mysql"}-${form}`,
    label: `hand-written loop, ${form === "rowLock" ? "row lock" : form}`,
    database,
    settings: `rowclaim bench's loop: ${statements[form]}; one loop per worker on its own connection`,
    async fill(jobs) {
      await server.fill(jobs);
      loop ??= await openHandWrittenLoop(
        database === "postgres" ? { dialect: "postgres", url } : { dialect: "mysql", url },
        { table, form, connections: maxWorkers },
      );
    },
    async drain(workers, _jobs, run) {
      const done = await (loop as HandWrittenLoop).drain(workers, run.handler, () => run.claiming());
      run.settled();
      return done;
    },
    async close() {
      await loop?.close();
      await server.close();
    },
  };
}
