/**
 * The child runner of the schedules sub-suite, run as a plain `node` process:
 * `node schedule-child.js '<ScheduleChildConfig JSON>'`. It imports the harness's
 * `childDriverModule`, runs one schedule on a broker whose clock runs `speed` times faster than
 * the machine's from a starting instant every child of the test shares (so that every process
 * agrees on the time), prints `ready`, and on SIGTERM closes the broker and prints `closed`.
 *
 * @module
 */
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import { BrokerError, createBroker, type Driver, defineTable, silentLogger } from "@rowclaim/core";
import type { ScheduleChildConfig } from "./schedule-support.js";

function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function fail(error: unknown): never {
  emit({
    event: "failed",
    code: BrokerError.is(error) ? error.code : null,
    message: error instanceof Error ? error.message : String(error),
  });
  process.exit(1);
}

async function main(): Promise<void> {
  const text = process.argv[2];
  if (text === undefined) throw new Error("Pass the child's configuration as JSON in argv[2].");
  const config = JSON.parse(text) as ScheduleChildConfig;
  const url = isAbsolute(config.driverModule) ? pathToFileURL(config.driverModule).href : config.driverModule;
  const module = (await import(url)) as { createDriver?: () => Driver | Promise<Driver> };
  if (typeof module.createDriver !== "function")
    throw new Error(`${config.driverModule} exports no createDriver().`);
  const { startMs, realStartMs, speed } = config.clock;
  const broker = createBroker({
    driver: await module.createDriver(),
    logger: silentLogger,
    clock: () => new Date(startMs + (Date.now() - realStartMs) * speed),
  });
  const keepAlive = setInterval(() => {}, 60_000);
  process.on("SIGTERM", () => {
    void broker.close({ timeout: 2000 }).then(() => {
      clearInterval(keepAlive);
      emit({ event: "closed" });
      process.exit(0);
    }, fail);
  });
  await broker.schedule(
    defineTable(config.table),
    config.name,
    config.cron,
    (tick: Date) => ({ tick: tick.toISOString() }),
    { backfill: config.backfill },
  );
  emit({ event: "ready" });
}

main().catch(fail);
