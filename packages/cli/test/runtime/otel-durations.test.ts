// The duration metrics with the real OpenTelemetry SDK: the histograms declare bucket boundaries
// in seconds (the unit they record in), and a handler that settles its row itself — a
// transactional body, or `delivery.settle()` — reports how long it ran, in the metric and in the
// `settled` event alike.
import type { HistogramMetricData, InMemoryMetricExporter } from "@opentelemetry/sdk-metrics";
import { ack, type BrokerEventMap, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { DURATION_BUCKETS_SECONDS, otelInstrumentation } from "@rowclaim/core/otel";
import { createPostgresDriver } from "@rowclaim/postgres";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { inMemoryMeter, lastMetric } from "./otel-support.js";
import { waitFor } from "./support.js";

function histogram(exporter: InMemoryMetricExporter, name: string): HistogramMetricData | undefined {
  return lastMetric(exporter, name) as HistogramMetricData | undefined;
}

/** A PostgreSQL broker with an in-memory metric reader, on a fresh lease table. */
async function meteredBroker(prefix: string) {
  const url = await databaseUrl("postgres");
  const name = uniquePrefix(prefix);
  const table = defineTable({ name, columns: { id: "id", payload: "payload", lockedUntil: "locked_until" } });
  const { exporter, reader, meterProvider } = inMemoryMeter();
  const driver = createPostgresDriver({ url, max: 4 });
  await driver.pool.query({ text: driver.schemaSql(table) });
  const broker = createBroker({
    driver,
    logger: silentLogger,
    instrumentation: otelInstrumentation({ meterProvider }),
  });
  const settled: BrokerEventMap["settled"][] = [];
  broker.on("settled", (event) => settled.push(event));
  const close = async () => {
    await broker.close();
    await meterProvider.shutdown();
    const cleanup = createPostgresDriver({ url, max: 1 });
    await cleanup.pool.query({ text: `DROP TABLE IF EXISTS "${name}"` });
    await cleanup.close();
  };
  return { broker, table, exporter, reader, settled, close };
}

describe("duration histograms declare bucket boundaries in seconds", () => {
  test("rowclaim.handler.duration and rowclaim.claim.duration use DURATION_BUCKETS_SECONDS", async () => {
    const { broker, table, exporter, reader, settled, close } = await meteredBroker("otel_buckets");
    try {
      await broker.subscribe(table, () => ack(), { pollInterval: 50 });
      await broker.publish(table, 1);
      await waitFor("the settlement", () => settled.length === 1);
      await reader.forceFlush();
      for (const name of ["rowclaim.handler.duration", "rowclaim.claim.duration"]) {
        const point = histogram(exporter, name)?.dataPoints[0];
        expect(point?.value.buckets.boundaries, name).toEqual([...DURATION_BUCKETS_SECONDS]);
      }
      expect(DURATION_BUCKETS_SECONDS).toContain(0.1);
      expect(DURATION_BUCKETS_SECONDS).toContain(1);
    } finally {
      await close();
    }
  });
});

describe("a handler that settles its own row reports how long it ran", () => {
  test("a transactional body of 100 ms records its time in rowclaim.handler.duration and the settled event", async () => {
    const { broker, table, exporter, reader, settled, close } = await meteredBroker("otel_tx_duration");
    try {
      let bodyMs = 0;
      await broker.subscribe(
        table,
        (delivery) =>
          delivery.transaction(async (client) => {
            const started = performance.now();
            await client.query("SELECT pg_sleep(0.1)");
            bodyMs = performance.now() - started;
            return ack();
          }),
        { transactional: true, pollInterval: 50 },
      );
      await broker.publish(table, 1);
      await waitFor("the settlement", () => settled.length === 1);
      expect(bodyMs).toBeGreaterThan(0);
      expect(settled[0]?.handlerMs).toBeGreaterThanOrEqual(bodyMs);
      await reader.forceFlush();
      const point = histogram(exporter, "rowclaim.handler.duration")?.dataPoints[0];
      expect(point?.value.count).toBe(1);
      expect(point?.value.sum).toBeGreaterThanOrEqual(bodyMs / 1000);
    } finally {
      await close();
    }
  });

  test("a handler that calls delivery.settle() records the time until it settled", async () => {
    const { broker, table, exporter, reader, settled, close } = await meteredBroker("otel_settle_duration");
    try {
      let workMs = 0;
      await broker.subscribe(
        table,
        async (delivery) => {
          const started = performance.now();
          await new Promise<void>((resolve) => setTimeout(resolve, 20));
          workMs = performance.now() - started;
          await delivery.settle(ack());
        },
        { pollInterval: 50 },
      );
      await broker.publish(table, 1);
      await waitFor("the settlement", () => settled.length === 1);
      expect(settled[0]?.handlerMs).toBeGreaterThanOrEqual(workMs);
      await reader.forceFlush();
      const point = histogram(exporter, "rowclaim.handler.duration")?.dataPoints[0];
      expect(point?.value.sum).toBeGreaterThanOrEqual(workMs / 1000);
    } finally {
      await close();
    }
  });
});
