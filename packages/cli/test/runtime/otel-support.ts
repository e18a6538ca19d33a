// Shared by the OpenTelemetry tests: a meter provider whose metrics an in-memory exporter keeps
// (read them after `reader.forceFlush()`), and the last export of one metric.
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";

/** A meter provider on an in-memory exporter that exports only when flushed. */
export function inMemoryMeter(): {
  exporter: InMemoryMetricExporter;
  reader: PeriodicExportingMetricReader;
  meterProvider: MeterProvider;
} {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  return { exporter, reader, meterProvider: new MeterProvider({ readers: [reader] }) };
}

/** The last exported data of the metric `name`. */
export function lastMetric(exporter: InMemoryMetricExporter, name: string): MetricData | undefined {
  const all = exporter
    .getMetrics()
    .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
  return all.filter((entry) => entry.descriptor.name === name).at(-1);
}
