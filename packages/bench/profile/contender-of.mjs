// The contender `id` of the built benchmark, made as the benchmark makes it for `workers` workers
// (the local services, or ROWCLAIM_POSTGRES_URL / ROWCLAIM_MYSQL_URL; HANDLER=sync for the sync
// handler), with the handler it runs: shared by the scripts of this folder.
import { contenderEntries } from "../dist/contenders.js";
import { handlerOf } from "../dist/work.js";

export async function contenderOf(id, workers) {
  const settings = {
    postgresUrl: process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    mysqlUrl: process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test",
    poolSize: workers + 4,
    maxWorkers: workers,
    handler: process.env.HANDLER ?? "async",
    subscribe: {},
    prefetch: [500],
    pgBossBatches: [500],
  };
  const entry = contenderEntries(settings).find((candidate) => candidate.id === id);
  if (entry === undefined) throw new Error(`no contender ${id}`);
  return { contender: await entry.create(), work: handlerOf(settings.handler) };
}
