/**
 * The child runner of the transactional handler tests, run as a plain `node` process with its
 * {@link TransactionalChildConfig} as JSON in argv[2]. It imports the harness's
 * `childDriverModule` (which exports `createDriver()` and `insertSideRow(client, table, job,
 * worker)`, and `transactionBodies = "sync"` where bodies must be synchronous), subscribes to the
 * table, and settles every delivery with `delivery.transaction`: the body writes one row
 * `(job = the payload, worker)` into the side table, then acks. It prints one JSON line per step:
 * `ready`, `claimed`, `inserted` (inside the open transaction), `committed`, `failed`.
 *
 * With `holdFile`, each delivery waits until that file exists: async drivers wait inside the
 * body, after the insert, with the transaction open; synchronous ones (SQLite) before the
 * transaction opens (the body cannot wait). The SIGSTOP test freezes the process there.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { ack, BrokerError, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { isPromiseLike } from "@rowclaim/core/driver";
import { importDriverModule, type TransactionalChildConfig } from "./transactional-support.js";

function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function waitForFile(file: string): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (existsSync(file)) resolve();
      else setTimeout(check, 10);
    };
    check();
  });
}

async function main(): Promise<void> {
  const text = process.argv[2];
  if (text === undefined) throw new Error("Pass the child's configuration as JSON in argv[2].");
  const config = JSON.parse(text) as TransactionalChildConfig;
  const module = await importDriverModule(config.driverModule);
  const insert = module.insertSideRow;
  if (typeof insert !== "function") throw new Error(`${config.driverModule} exports no insertSideRow().`);
  const sync = module.transactionBodies === "sync";
  const table = defineTable(config.table);
  const broker = createBroker({ driver: await module.createDriver(), logger: silentLogger });
  const keepAlive = setInterval(() => {}, 60_000);
  process.on("SIGTERM", () => {
    void broker.close({ timeout: 2000 }).then(() => {
      clearInterval(keepAlive);
      process.exit(0);
    });
  });
  const { holdFile, side, worker } = config;
  await broker.subscribe(
    table,
    async (delivery) => {
      const job = String(delivery.payload);
      emit({ event: "claimed", job, pid: process.pid });
      if (config.paceMs !== undefined && config.paceMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * (config.paceMs ?? 0)));
      }
      if (sync && holdFile !== undefined) await waitForFile(holdFile);
      try {
        await delivery.transaction((client) => {
          const inserted = insert(client, side, job, worker);
          if (!isPromiseLike(inserted)) {
            emit({ event: "inserted", job });
            return ack();
          }
          return Promise.resolve(inserted).then(async () => {
            emit({ event: "inserted", job });
            if (holdFile !== undefined) await waitForFile(holdFile);
            return ack();
          });
        });
        emit({ event: "committed", job });
      } catch (error) {
        emit({
          event: "failed",
          job,
          code: BrokerError.is(error) ? error.code : null,
          message: String(error),
        });
        throw error;
      }
    },
    { ...config.subscribe, transactional: true },
  );
  emit({ event: "ready" });
}

main().catch((error: unknown) => {
  emit({
    event: "failed",
    job: null,
    code: BrokerError.is(error) ? error.code : null,
    message: String(error),
  });
  process.exit(1);
});
