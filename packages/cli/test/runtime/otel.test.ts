import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { context, SpanKind } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { ack, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { otelInstrumentation } from "@rowclaim/core/otel";
import { createPostgresDriver } from "@rowclaim/postgres";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { inMemoryMeter, lastMetric } from "./otel-support.js";
import { leaseColumns, sqliteBroker, waitFor } from "./support.js";

const publisher = fileURLToPath(new URL("./otel-publisher.mjs", import.meta.url));

/** Runs the publishing process; resolves with the ids of its publish span. */
function publishInChild(
  url: string,
  table: string,
): Promise<{ name: string; kind: number; traceId: string; spanId: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [publisher, url, table], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`the publisher failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

describe("OpenTelemetry on PostgreSQL, across processes", () => {
  test("the handler's span is a child of the publish span of another process, and metrics count the delivery", async () => {
    const url = await databaseUrl("postgres");
    const name = uniquePrefix("otel");
    const table = defineTable({
      name,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        headers: "headers",
        lockedUntil: "locked_until",
      },
    });
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const { exporter: metrics, reader, meterProvider } = inMemoryMeter();
    const driver = createPostgresDriver({ url, max: 4 });
    await driver.pool.query({ text: driver.schemaSql(table) });
    const broker = createBroker({
      driver,
      logger: silentLogger,
      instrumentation: otelInstrumentation({ tracerProvider, meterProvider }),
    });
    try {
      const handled: { tenant: string | undefined }[] = [];
      await broker.subscribe(
        table,
        (delivery) => {
          handled.push({ tenant: delivery.headers.tenant });
          return ack();
        },
        { pollInterval: 50 },
      );
      const published = await publishInChild(url, name);
      expect(published.kind).toBe(SpanKind.PRODUCER);
      await waitFor("the delivery span", () => spans.getFinishedSpans().length === 1);
      const delivery = spans.getFinishedSpans()[0] as ReadableSpan;
      expect(delivery.name).toBe(`process ${name}`);
      expect(delivery.kind).toBe(SpanKind.CONSUMER);
      expect(delivery.spanContext().traceId).toBe(published.traceId);
      expect(delivery.parentSpanContext?.spanId).toBe(published.spanId);
      expect(delivery.attributes["rowclaim.outcome"]).toBe("ack");
      // The publisher's own headers travel beside the trace context.
      expect(handled).toEqual([{ tenant: "t1" }]);

      await reader.forceFlush();
      const claimed = lastMetric(metrics, "rowclaim.claimed");
      expect(claimed?.dataPoints.reduce((sum, point) => sum + Number(point.value), 0)).toBe(1);
      const settled = lastMetric(metrics, "rowclaim.settled");
      expect(settled?.dataPoints.map((point) => [point.attributes.outcome, point.value])).toEqual([
        ["ack", 1],
      ]);
      const inWork = lastMetric(metrics, "rowclaim.in_work");
      expect(inWork?.dataPoints.map((point) => point.value)).toEqual([0]);
      const handlerDuration = lastMetric(metrics, "rowclaim.handler.duration");
      expect((handlerDuration?.dataPoints[0]?.value as { count: number } | undefined)?.count).toBe(1);
      const claimDuration = lastMetric(metrics, "rowclaim.claim.duration");
      expect((claimDuration?.dataPoints[0]?.value as { count: number } | undefined)?.count).toBe(1);
    } finally {
      await broker.close();
      await meterProvider.shutdown();
      const cleanup = createPostgresDriver({ url, max: 1 });
      await cleanup.pool.query({ text: `DROP TABLE IF EXISTS "${name}"` });
      await cleanup.close();
    }
  });

  test("a publish in the same process writes traceparent into the row's headers, and a failed handler marks its span", async () => {
    const url = await databaseUrl("postgres");
    const name = uniquePrefix("otel_fail");
    const table = defineTable({
      name,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        headers: "headers",
        lockedUntil: "locked_until",
      },
      maxAttempts: 1,
      deadLetter: { table: `${name}_dead` },
    });
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const driver = createPostgresDriver({ url, max: 4 });
    await driver.pool.query({ text: driver.schemaSql(table) });
    const dead = defineTable({ name: `${name}_dead`, columns: table.columns });
    await driver.pool.query({ text: driver.schemaSql(dead) });
    const broker = createBroker({
      driver,
      logger: silentLogger,
      instrumentation: otelInstrumentation({ tracerProvider }),
    });
    try {
      const traceparents: (string | undefined)[] = [];
      await broker.subscribe(
        table,
        (delivery) => {
          traceparents.push(delivery.headers.traceparent);
          throw new Error("handler failed");
        },
        { pollInterval: 50 },
      );
      await broker.publish(table, 1);
      await waitFor("publish and delivery spans", () => spans.getFinishedSpans().length === 2);
      const [publish, process] = spans.getFinishedSpans() as [ReadableSpan, ReadableSpan];
      expect(publish.name).toBe(`publish ${name}`);
      expect(traceparents[0]).toBe(`00-${publish.spanContext().traceId}-${publish.spanContext().spanId}-01`);
      expect(process.parentSpanContext?.spanId).toBe(publish.spanContext().spanId);
      expect(process.status.code).toBe(2); // SpanStatusCode.ERROR
      expect(process.attributes["rowclaim.outcome"]).toBe("deadLetter");
      expect(process.events.map((event) => event.name)).toContain("exception");
    } finally {
      await broker.close();
      const cleanup = createPostgresDriver({ url, max: 1 });
      await cleanup.pool.query({ text: `DROP TABLE IF EXISTS "${name}", "${name}_dead"` });
      await cleanup.close();
    }
  });
});

describe("OpenTelemetry context inside a handler", () => {
  test("a span the handler starts is a child of the delivery's span", async () => {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const name = uniquePrefix("otel_ctx");
    const table = defineTable({ name, columns: leaseColumns });
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const { broker } = sqliteBroker([table], {
      logger: silentLogger,
      instrumentation: otelInstrumentation({ tracerProvider }),
    });
    try {
      const tracer = tracerProvider.getTracer("handler");
      await broker.subscribe(
        table,
        async () => {
          await new Promise<void>((resolve) => setImmediate(resolve));
          tracer.startSpan("send email").end();
          return ack();
        },
        { pollInterval: 20 },
      );
      await broker.publish(table, 1);
      await waitFor("three spans", () => spans.getFinishedSpans().length === 3);
      const byName = new Map(spans.getFinishedSpans().map((span) => [span.name, span]));
      const processSpan = byName.get(`process ${name}`);
      expect(byName.get("send email")?.parentSpanContext?.spanId).toBe(processSpan?.spanContext().spanId);
      expect(processSpan?.parentSpanContext?.spanId).toBe(
        byName.get(`publish ${name}`)?.spanContext().spanId,
      );
    } finally {
      await broker.close();
      context.disable();
    }
  });
});
