// A broker keeps its most recent handler delivery reachable until the next delivery or its close
// (core's `src/recent-delivery.ts`: so that V8 keeps the delivery path's optimized code while the
// queue is idle), and keeps nothing once closed. Watched through a WeakRef to the handler's `job`
// after full garbage collections.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  ack,
  type Broker,
  createBroker,
  defineTable,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { leaseTable, uniqueName, useSqliteFile, waitFor } from "./support.js";

const sqlite = useSqliteFile();

/** A full garbage collection, whatever flags the test process started with. */
function collector(): () => void {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === "function") return exposed as () => void;
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

/** Collects garbage once the current job is over (a WeakRef keeps its target until then). */
async function collected(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  collector()();
}

function table(): TableDefinition {
  const defined = defineTable(leaseTable(uniqueName("recent")));
  sqlite.db.exec(sqlite.driver().schemaSql(defined));
  return defined;
}

/** Runs one delivery of a new row through a new subscription, stops it, and returns a WeakRef to its `job`. */
async function deliverOne(broker: Broker, of: TableDefinition): Promise<WeakRef<object>> {
  await broker.publish(of, { n: 1 });
  let seen: WeakRef<object> | undefined;
  const subscription = await broker.subscribe(of, (job) => {
    seen = new WeakRef(job);
    return ack();
  });
  await waitFor(() => subscription.stats.acked === 1);
  await subscription.stop();
  if (seen === undefined) throw new Error("the handler did not run");
  return seen;
}

/** A broker on the test's database file, closed after `test` (`close` is idempotent). */
async function withBroker(test: (broker: Broker) => Promise<void>): Promise<void> {
  const broker = createBroker({
    driver: createSqliteDriver({ filename: sqlite.file }),
    logger: silentLogger,
  });
  try {
    await test(broker);
  } finally {
    await broker.close();
  }
}

describe("a broker keeps its most recent delivery until the next one or its close", () => {
  it("the last delivery stays reachable after its subscription stopped and a full collection ran", () =>
    withBroker(async (broker) => {
      const last = await deliverOne(broker, table());
      await collected();
      expect(last.deref()).toBeDefined();
    }));

  it("a later delivery lets the earlier one go", () =>
    withBroker(async (broker) => {
      const first = await deliverOne(broker, table());
      const second = await deliverOne(broker, table());
      await collected();
      expect(first.deref()).toBeUndefined();
      expect(second.deref()).toBeDefined();
    }));

  it("closing the broker lets the last delivery go", () =>
    withBroker(async (broker) => {
      const last = await deliverOne(broker, table());
      await broker.close();
      await collected();
      expect(last.deref()).toBeUndefined();
    }));
});
