/**
 * The instrumentation interface: the points where the broker lets a tracing and metrics
 * library in. Core depends on no such library; `@rowclaim/core/otel` implements this interface
 * with OpenTelemetry (`createBroker({ driver, instrumentation: otelInstrumentation() })`), and
 * another library can implement it the same way.
 *
 * @module
 */
import type { Outcome } from "./outcomes.js";
import type { ClaimedRow, Headers } from "./rows.js";
import type { TableDefinition } from "./table.js";

/** One publish (one `publish` or `publishMany` call) in progress. */
export interface PublishScope {
  /**
   * Headers to write into every published row, for example the W3C `traceparent` of the
   * publish span, so that the delivery's span becomes its child in whichever process claims it.
   * Written only where the table has a headers column; a header the publisher gave wins.
   */
  readonly headers: Headers | undefined;
  /** The publish ended: `error` is what it threw, if it failed. */
  end(error?: unknown): void;
}

/** One delivery (claim to settlement) in progress. */
export interface DeliveryScope {
  /** Runs the handler inside the delivery's context, so that the spans it starts are children of the delivery's. */
  run<T>(handler: () => T): T;
  /** The handler threw, returned something that is not an outcome, or the payload failed the table's schema. */
  failed(error: unknown): void;
  /**
   * The delivery ended: settled by `outcome`, or, with `outcome` undefined, its settlement failed
   * with `error` (lease lost, broker closed, database error). `handlerMs` is how long the handler ran,
   * in milliseconds, as the `settled` event's `handlerMs` counts it.
   */
  end(outcome: Outcome["kind"] | undefined, handlerMs: number, error?: unknown): void;
}

/** What the broker calls to trace and measure its work. Every method must be cheap and must not throw. */
export interface Instrumentation {
  /** A publish of `count` rows to `table` begins. */
  startPublish(table: TableDefinition, count: number): PublishScope;
  /** A claim took `count` rows of `table` in `claimMs` milliseconds. */
  claimed(table: TableDefinition, count: number, claimMs: number): void;
  /** A claimed row's delivery begins (before the handler runs); `row.headers` carries the publisher's context. */
  startDelivery(table: TableDefinition, row: ClaimedRow): DeliveryScope;
}
