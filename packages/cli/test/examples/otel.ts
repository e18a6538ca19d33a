// The core README's "OpenTelemetry" example, run by test/runtime/examples.test.ts.
import type { MeterProvider, TracerProvider } from "@opentelemetry/api";
import { type Broker, createBroker, type Driver } from "@rowclaim/core";
import { otelInstrumentation } from "@rowclaim/core/otel";

/** A broker that records spans and metrics with the given providers. */
export function otelBrokerExample(
  driver: Driver,
  tracerProvider: TracerProvider,
  meterProvider: MeterProvider,
): Broker {
  // #region otel
  // With the OpenTelemetry Node SDK started, otelInstrumentation() alone uses its global providers.
  const broker = createBroker({
    driver,
    instrumentation: otelInstrumentation({ tracerProvider, meterProvider }),
  });
  // #endregion otel
  return broker;
}
