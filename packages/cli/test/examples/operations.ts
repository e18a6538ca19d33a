// The core README's "Events", "Shutdown" and "Testing" examples, run by test/runtime/examples.test.ts.
import { ack, type Broker, createBroker, type Driver, defineTable } from "@rowclaim/core";
import { type DrainReport, drainTable } from "@rowclaim/core/testing";

/** A broker that closes on SIGTERM/SIGINT and counts settlements by outcome into `counts`. */
export function eventsExample(driver: Driver, counts: Map<string, number>): Broker {
  // #region events
  const broker = createBroker({ driver, handleSignals: true }); // SIGTERM, SIGINT: broker.close()
  broker.on("settled", ({ table, outcome, durationMs }) => {
    counts.set(`${table.name}:${outcome}`, (counts.get(`${table.name}:${outcome}`) ?? 0) + 1);
    void durationMs; // for example a histogram of your metrics library
  });
  broker.on("failed", ({ table, id, error }) => console.error(`${table.name} ${String(id)} failed`, error));
  // #endregion events
  return broker;
}

/** The testing helper: publish, drain, report. */
export async function drainExample(broker: Broker, name: string): Promise<DrainReport> {
  // #region drain
  const jobs = defineTable<{ n: number }>({
    name,
    columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
  });
  await broker.subscribe(jobs, () => ack());
  await broker.publish(jobs, { n: 1 });
  const report = await drainTable(broker, jobs); // report.outcomes: { ack: 1 }
  // #endregion drain
  return report;
}
