/**
 * `@rowclaim/core/otel`: OpenTelemetry spans and metrics for a broker.
 *
 * ```ts
 * import { otelInstrumentation } from "@rowclaim/core/otel";
 * const broker = createBroker({ driver, instrumentation: otelInstrumentation() });
 * ```
 *
 * This module is the only one that imports `@opentelemetry/api`, an optional peer dependency:
 * install it (and an SDK) to use this entry point; `@rowclaim/core` itself never loads it.
 *
 * - A `PRODUCER` span `publish <table>` for each `publish`/`publishMany`; its context is written
 *   into each row's headers (W3C `traceparent`, through the registered propagator), where the
 *   table has a headers column.
 * - A `CONSUMER` span `process <table>` for each delivery, from the claim to the settlement,
 *   whose parent is the publish span read from the row's headers, in whichever process claims
 *   the row; the handler runs inside it, so its own spans are children of the delivery's.
 * - Metrics: `rowclaim.published`, `rowclaim.claimed`, `rowclaim.settled` (by `outcome`),
 *   `rowclaim.failed`, `rowclaim.timed_out` (handlers past their `timeout` and grace, counted in
 *   `rowclaim.failed` too), `rowclaim.in_work`, histograms `rowclaim.handler.duration` and
 *   `rowclaim.claim.duration` (seconds, with the bucket boundaries {@link DURATION_BUCKETS_SECONDS});
 *   each carries `rowclaim.table`. A handler's duration runs until it returned or settled its row
 *   itself (`delivery.settle()`, a transaction body's commit), whichever came first.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  type Counter,
  context,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  type TracerProvider,
  trace,
  type UpDownCounter,
} from "@opentelemetry/api";
import { BrokerError } from "./errors.js";
import type { Outcome } from "./outcomes.js";
import type { ClaimedRow, Headers } from "./rows.js";
import type { TableDefinition } from "./table.js";
import type { DeliveryScope, Instrumentation, PublishScope } from "./telemetry.js";

/** The instrumentation scope name spans and metrics are reported under. */
export const INSTRUMENTATION_NAME = "@rowclaim/core";

/**
 * The bucket boundaries, in seconds, of the duration histograms (`rowclaim.handler.duration`,
 * `rowclaim.claim.duration`): from 1 ms to 1 minute. They are declared through OpenTelemetry's
 * advice API (`advice.explicitBucketBoundaries`, honoured by an SDK that implements it, as
 * `@opentelemetry/sdk-metrics` 2.x does), because the SDK's default boundaries (0 to 10,000) are meant for milliseconds and would
 * put every duration in seconds into the first bucket. A View the application registers for these
 * instruments takes precedence.
 */
export const DURATION_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60,
]);

/** How {@link otelInstrumentation} finds its tracer, meter and propagator. */
export interface OtelInstrumentationOptions {
  /** The tracer provider. Default: the global one (`trace.getTracerProvider()`). */
  readonly tracerProvider?: TracerProvider;
  /** The meter provider. Default: the global one (`metrics.getMeterProvider()`). */
  readonly meterProvider?: MeterProvider;
  /**
   * How trace context is written into and read from a row's headers. Default: the registered
   * global propagator, and the W3C `traceparent` header where that writes nothing (no SDK
   * registered one).
   */
  readonly propagator?: TextMapPropagator;
}

/** Records spans and metrics of a broker with OpenTelemetry. Pass it as `createBroker({ instrumentation })`. */
export function otelInstrumentation(options: OtelInstrumentationOptions = {}): Instrumentation {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_NAME);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME);
  return new OtelInstrumentation(tracer, meter, options.propagator);
}

interface Instruments {
  readonly published: Counter;
  readonly claimed: Counter;
  readonly settled: Counter;
  readonly failed: Counter;
  readonly timedOut: Counter;
  readonly inWork: UpDownCounter;
  readonly handlerDuration: Histogram;
  readonly claimDuration: Histogram;
}

const headerSetter = {
  set(carrier: Record<string, string>, key: string, value: string): void {
    carrier[key] = value;
  },
};

const headerGetter = {
  get(carrier: Headers, key: string): string | undefined {
    return carrier[key];
  },
  keys(carrier: Headers): string[] {
    return Object.keys(carrier);
  },
};

class OtelInstrumentation implements Instrumentation {
  readonly #tracer: Tracer;
  readonly #instruments: Instruments;
  readonly #propagator: TextMapPropagator | undefined;
  /** One attribute object per table, so that measurements allocate nothing per row. */
  readonly #tableAttributes = new Map<string, Attributes>();

  constructor(tracer: Tracer, meter: Meter, propagator: TextMapPropagator | undefined) {
    this.#tracer = tracer;
    this.#propagator = propagator;
    this.#instruments = {
      published: meter.createCounter("rowclaim.published", { description: "Rows published." }),
      claimed: meter.createCounter("rowclaim.claimed", { description: "Rows claimed." }),
      settled: meter.createCounter("rowclaim.settled", {
        description: "Rows settled, by outcome (`error`: the settlement failed).",
      }),
      failed: meter.createCounter("rowclaim.failed", {
        description: "Deliveries whose handler threw or whose payload failed the table's schema.",
      }),
      timedOut: meter.createCounter("rowclaim.timed_out", {
        description: "Deliveries whose handler ran past the subscription's timeout and its grace.",
      }),
      inWork: meter.createUpDownCounter("rowclaim.in_work", { description: "Deliveries in work." }),
      handlerDuration: meter.createHistogram("rowclaim.handler.duration", {
        description: "How long handlers ran.",
        unit: "s",
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
      }),
      claimDuration: meter.createHistogram("rowclaim.claim.duration", {
        description: "How long claims that took rows ran.",
        unit: "s",
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] },
      }),
    };
  }

  startPublish(table: TableDefinition, count: number): PublishScope {
    const span = this.#tracer.startSpan(
      `publish ${table.name}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          "messaging.system": "rowclaim",
          "messaging.operation.type": "send",
          "messaging.destination.name": table.name,
          "messaging.batch.message_count": count,
        },
      },
      context.active(),
    );
    const headers = table.columns.headers === undefined ? undefined : this.#inject(span);
    const instruments = this.#instruments;
    const attributes = this.#attributes(table);
    return {
      headers,
      end(error?: unknown): void {
        if (error !== undefined) fail(span, error);
        else instruments.published.add(count, attributes);
        span.end();
      },
    };
  }

  claimed(table: TableDefinition, count: number, claimMs: number): void {
    const attributes = this.#attributes(table);
    this.#instruments.claimed.add(count, attributes);
    this.#instruments.claimDuration.record(claimMs / 1000, attributes);
  }

  startDelivery(table: TableDefinition, row: ClaimedRow): DeliveryScope {
    const parent = this.#extract(row.headers);
    const span = this.#tracer.startSpan(
      `process ${table.name}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          "messaging.system": "rowclaim",
          "messaging.operation.type": "process",
          "messaging.destination.name": table.name,
          "messaging.message.id": String(row.id),
          "rowclaim.attempt": row.attempt,
          "rowclaim.form": table.form,
          ...(row.group === null ? {} : { "rowclaim.group": row.group }),
        },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    const instruments = this.#instruments;
    const attributes = this.#attributes(table);
    instruments.inWork.add(1, attributes);
    let ended = false;
    return {
      run: <T>(handler: () => T): T => context.with(active, handler),
      failed(error: unknown): void {
        instruments.failed.add(1, attributes);
        if (BrokerError.is(error, "HANDLER_TIMEOUT")) instruments.timedOut.add(1, attributes);
        fail(span, error);
      },
      end(outcome: Outcome["kind"] | undefined, handlerMs: number, error?: unknown): void {
        if (ended) return;
        ended = true;
        instruments.inWork.add(-1, attributes);
        const kind = outcome ?? "error";
        instruments.settled.add(1, { ...attributes, outcome: kind });
        instruments.handlerDuration.record(handlerMs / 1000, { ...attributes, outcome: kind });
        span.setAttribute("rowclaim.outcome", kind);
        if (error !== undefined) fail(span, error);
        span.end();
      },
    };
  }

  #attributes(table: TableDefinition): Attributes {
    let attributes = this.#tableAttributes.get(table.name);
    if (attributes === undefined) {
      attributes = Object.freeze({ "rowclaim.table": table.name });
      this.#tableAttributes.set(table.name, attributes);
    }
    return attributes;
  }

  #inject(span: Span): Headers {
    const carrier: Record<string, string> = {};
    const withSpan = trace.setSpan(context.active(), span);
    if (this.#propagator !== undefined) this.#propagator.inject(withSpan, carrier, headerSetter);
    else {
      propagation.inject(withSpan, carrier, headerSetter);
      if (carrier.traceparent === undefined) {
        const { traceId, spanId, traceFlags } = span.spanContext();
        if (trace.isSpanContextValid(span.spanContext()))
          carrier.traceparent = `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
      }
    }
    return carrier;
  }

  #extract(headers: Headers): Context {
    if (this.#propagator !== undefined) return this.#propagator.extract(ROOT_CONTEXT, headers, headerGetter);
    const extracted = propagation.extract(ROOT_CONTEXT, headers, headerGetter);
    if (trace.getSpanContext(extracted) !== undefined) return extracted;
    const parsed = parseTraceparent(headers.traceparent);
    return parsed === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parsed);
  }
}

function fail(span: Span, error: unknown): void {
  if (error instanceof Error) span.recordException(error);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Reads a W3C `traceparent` header (version 00) into a remote span context. */
function parseTraceparent(
  value: string | undefined,
): { traceId: string; spanId: string; traceFlags: number; isRemote: true } | undefined {
  if (value === undefined) return undefined;
  const match = traceparentPattern.exec(value.trim());
  if (match === null) return undefined;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  const spanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true as const };
  return trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}
