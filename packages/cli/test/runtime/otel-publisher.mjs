// The publishing process of the OpenTelemetry test: publishes one row through a broker
// instrumented with its own tracer provider, then prints the publish span's ids as JSON.
// Usage: node otel-publisher.mjs <postgres url> <table>

import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { createBroker, defineTable } from "@rowclaim/core";
import { otelInstrumentation } from "@rowclaim/core/otel";
import { createPostgresDriver } from "@rowclaim/postgres";

const [url, name] = process.argv.slice(2);
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
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
const broker = createBroker({
  driver: createPostgresDriver({ url, max: 2 }),
  instrumentation: otelInstrumentation({ tracerProvider }),
});
await broker.publish(table, { to: "a@example.com" }, { headers: { tenant: "t1" } });
await broker.close();
const [span] = exporter.getFinishedSpans();
process.stdout.write(
  JSON.stringify({
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
  }),
);
