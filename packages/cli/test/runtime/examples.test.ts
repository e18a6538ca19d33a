import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { BrokerError, defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, test } from "vitest";
import { pinoBrokerExample } from "../examples/logging.js";
import { drainExample, eventsExample } from "../examples/operations.js";
import { otelBrokerExample } from "../examples/otel.js";
import { schemaTableExample, typedTableExample } from "../examples/typed-table.js";
import { tempDir, uniquePrefix } from "../support.js";
import { waitFor } from "./support.js";

const columns = { id: "id", payload: "payload", headers: "headers", lockedUntil: "locked_until" } as const;

function sqliteDriver(names: readonly string[], extra: readonly string[] = []) {
  const driver = createSqliteDriver({ filename: join(tempDir(), "examples.db") });
  for (const name of names)
    driver.database.exec(driver.schemaSql(defineTable({ name, columns, extraColumns: extra })));
  return driver;
}

describe("the core README's examples", () => {
  test("every ts block marked as an example is the region of the file it names", () => {
    const readme = readFileSync(new URL("../../../core/README.md", import.meta.url), "utf8");
    const marked = [...readme.matchAll(/<!-- example: (\S+)#(\S+) -->\n```ts\n([\s\S]*?)```/g)];
    expect(marked.length).toBeGreaterThanOrEqual(6);
    for (const [, path, region, block] of marked) {
      const source = readFileSync(new URL(`../../../../${path}`, import.meta.url), "utf8");
      const match = new RegExp(`// #region ${region}\\n([\\s\\S]*?)\\n\\s*// #endregion ${region}`).exec(
        source,
      );
      expect(match, `${path}#${region}`).not.toBeNull();
      const lines = (match?.[1] ?? "").split("\n");
      const indent = Math.min(
        ...lines.filter((line) => line.trim() !== "").map((line) => /^ */.exec(line)?.[0].length ?? 0),
      );
      expect(block).toBe(`${lines.map((line) => line.slice(indent)).join("\n")}\n`);
    }
  });

  test("typed table: the published email reaches the handler", async () => {
    const name = uniquePrefix("ex_typed");
    const driver = sqliteDriver([name], ["account"]);
    const { createBroker } = await import("@rowclaim/core");
    const broker = createBroker({ driver });
    try {
      const sent: string[] = [];
      await typedTableExample(broker, name, async (to) => {
        sent.push(to);
      });
      await waitFor("the email", () => sent.length === 1);
      expect(sent).toEqual(["ada@example.com"]);
      const row = driver.database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number };
      await waitFor(
        "the ack",
        () => (driver.database.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n === 0,
      );
      expect(row.n).toBeLessThanOrEqual(1);
    } finally {
      await broker.close();
    }
  });

  test("schema table: the invalid order is refused with INVALID_ARGUMENT naming quantity", async () => {
    const name = uniquePrefix("ex_schema");
    const driver = sqliteDriver([name]);
    const { createBroker } = await import("@rowclaim/core");
    const broker = createBroker({ driver });
    try {
      const refused = await schemaTableExample(broker, name);
      expect(BrokerError.is(refused, "INVALID_ARGUMENT")).toBe(true);
      expect((refused as Error).message).toContain("quantity: must be at least 1");
    } finally {
      await broker.close();
    }
  });

  test("pino: a broker made with pino writes debug traces as JSON lines", async () => {
    const name = uniquePrefix("ex_pino");
    const lines: { msg: string; level: number }[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line !== "") lines.push(JSON.parse(line));
        done();
      },
    });
    const broker = pinoBrokerExample(sqliteDriver([name]), destination);
    try {
      const report = await drainExample(broker, name);
      expect(report.outcomes).toEqual({ ack: 1 });
      await waitFor("the settlement trace", () =>
        lines.some((line) => line.level === 20 && line.msg.includes("settled")),
      );
    } finally {
      await broker.close();
    }
  });

  test("events and drain: the settled listener counts the ack", async () => {
    const name = uniquePrefix("ex_events");
    const counts = new Map<string, number>();
    const broker = eventsExample(sqliteDriver([name]), counts);
    try {
      const report = await drainExample(broker, name);
      expect(report.outcomes).toEqual({ ack: 1 });
      expect(counts.get(`${name}:ack`)).toBe(1);
    } finally {
      await broker.close();
    }
  });

  test("otel: publish and delivery spans are recorded", async () => {
    const name = uniquePrefix("ex_otel");
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const meterProvider = new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
          exportIntervalMillis: 3_600_000,
        }),
      ],
    });
    const broker = otelBrokerExample(sqliteDriver([name]), tracerProvider, meterProvider);
    try {
      await drainExample(broker, name);
      await waitFor("two spans", () => spans.getFinishedSpans().length === 2);
      expect(spans.getFinishedSpans().map((span) => span.name)).toEqual([
        `publish ${name}`,
        `process ${name}`,
      ]);
    } finally {
      await broker.close();
      await meterProvider.shutdown();
    }
  });
});
