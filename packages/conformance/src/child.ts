/**
 * The child runner of the crash and multi-process tests, run as a plain `node` process:
 * `node @rowclaim/conformance/child '<ChildConfig JSON>'` (or the JSON in
 * `ROWCLAIM_CONFORMANCE_CHILD`). It imports the harness's `childDriverModule`, builds the table
 * from the description, then subscribes (printing a line as each handler starts) or publishes.
 * SIGTERM closes its broker and exits; the crash tests send SIGKILL instead.
 *
 * @module
 */
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import {
  ack,
  type Broker,
  BrokerError,
  createBroker,
  type Driver,
  defineTable,
  silentLogger,
  type UniqueOptions,
} from "@rowclaim/core";
import { CHILD_CONFIG_ENV, type ChildConfig, type ChildEvent } from "./child-protocol.js";

function emit(event: ChildEvent): void {
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

async function loadDriver(specifier: string): Promise<Driver> {
  const url = isAbsolute(specifier) ? pathToFileURL(specifier).href : specifier;
  const module = (await import(url)) as { createDriver?: () => Driver | Promise<Driver> };
  if (typeof module.createDriver !== "function") {
    throw new Error(
      `${specifier} exports no createDriver(): the harness's childDriverModule must export one.`,
    );
  }
  return module.createDriver();
}

/** `publish` on every payload, at most `inFlight` at once (all at once without it); the answers in order. */
async function publishEach<T>(
  payloads: readonly unknown[],
  inFlight: number | undefined,
  publish: (payload: unknown) => Promise<T>,
): Promise<T[]> {
  const answers = new Array<T>(payloads.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < payloads.length) {
      const index = next;
      next += 1;
      answers[index] = await publish(payloads[index]);
    }
  };
  const lanes = Math.max(1, Math.min(inFlight ?? payloads.length, payloads.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  return answers;
}

async function main(): Promise<void> {
  const text = process.argv[2] ?? process.env[CHILD_CONFIG_ENV];
  if (text === undefined)
    throw new Error(`Pass the child's configuration as JSON in argv[2] or ${CHILD_CONFIG_ENV}.`);
  const config = JSON.parse(text) as ChildConfig;
  const table = defineTable(config.table);
  const broker: Broker = createBroker({
    driver: await loadDriver(config.driverModule),
    logger: silentLogger,
  });
  if (config.mode === "publish") {
    const unique = config.unique as UniqueOptions | undefined;
    const ids =
      unique === undefined
        ? await broker.publishMany(
            table,
            (config.payloads ?? []).map((payload) => ({ payload })),
          )
        : await publishEach(config.payloads ?? [], config.inFlight, (payload) =>
            broker.publish(table, payload, unique).then((result) => result.id),
          );
    emit({ event: "published", ids: ids.map(String) });
    await broker.close();
    emit({ event: "closed" });
    return;
  }
  const keepAlive = setInterval(() => {}, 60_000);
  process.on("SIGTERM", () => {
    void broker.close({ timeout: 2000 }).then(() => {
      clearInterval(keepAlive);
      emit({ event: "closed" });
      process.exit(0);
    }, fail);
  });
  const hang = new Promise<never>(() => {});
  const record = config.record === undefined ? undefined : defineTable(config.record);
  await broker.subscribe(
    table,
    async (delivery) => {
      emit({
        event: "started",
        id: String(delivery.id),
        attempt: delivery.attempt,
        payload: delivery.payload instanceof Uint8Array ? null : delivery.payload,
        leaseExpiry: delivery.leaseExpiry === undefined ? null : delivery.leaseExpiry.toISOString(),
        at: Date.now(),
      });
      const phase = async (name: "start" | "end"): Promise<void> => {
        if (record === undefined) return;
        await broker.publish(record, { row: String(delivery.id), phase: name, payload: delivery.payload });
      };
      await phase("start");
      if (config.mode === "hang") await hang;
      if (config.workMs !== undefined && config.workMs > 0)
        await new Promise((resolve) => setTimeout(resolve, config.workMs));
      await phase("end");
      emit({ event: "finished", id: String(delivery.id), at: Date.now() });
      return ack();
    },
    config.subscribe ?? {},
  );
  emit({ event: "ready" });
}

main().catch(fail);
