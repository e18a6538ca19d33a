/**
 * `@rowclaim/core`: a job and message queue kept in your own SQL tables. Describe a table with
 * {@link defineTable}, create a {@link Broker} on a driver, subscribe handlers and publish rows.
 *
 * This entry is the user API: tables and their types, the broker and its options, outcomes,
 * deliveries and events, errors, run-time controls, schedules, queue status and row operations.
 * The other entries:
 *
 * - `@rowclaim/core/driver`: what a driver author builds on (the {@link Driver} contract's parts,
 *   the claimer interface of each form, tokens, settlements, row encoding and decoding, option and
 *   pool checks, bounded connection waits), with the same error classes;
 * - `@rowclaim/core/testing`: `drainTable`, for a service's own tests;
 * - `@rowclaim/core/otel`: OpenTelemetry instrumentation.
 *
 * @packageDocumentation
 */

export { type AdvisoryLockOptions, MAX_ADVISORY_LIMIT } from "./advisory-limit.js";
export type { BackoffOptions } from "./backoff.js";
export {
  Broker,
  type BrokerOptions,
  CLOSE_GRACE_MS,
  createBroker,
  type PublishMessage,
  type PublishMessageFor,
  type PublishOptions,
  type PublishOptionsFor,
  type PublishTarget,
  type SubscribeOptions,
  type UniquePublishMessageFor,
  type UniquePublishOptionsFor,
  type ValuesFor,
} from "./broker.js";
export type { ClockSkewOptions, ClockSkewReading } from "./clock-skew.js";
export {
  type ControlScope,
  type ControlState,
  type PauseOptions,
  type RateLimitOptions,
  type RateState,
  TABLE_SCOPE,
  UnsupportedControlError,
} from "./controls.js";
export type { Delivery, Handler, HandlerResult } from "./delivery.js";
export type { Driver } from "./driver.js";
export {
  AuthenticationError,
  BatchRolledBackError,
  BrokerError,
  type BrokerErrorCode,
  type BrokerErrorOptions,
  ClockSkewError,
  ClosedError,
  CloseTimeoutError,
  ConnectionLostError,
  ConnectionTimeoutError,
  ConstraintError,
  DeadlockError,
  DeclarationError,
  HandlerTimeoutError,
  InvalidArgumentError,
  LeaseLostError,
  LockTimeoutError,
  SchemaError,
  ServerTooOldError,
  UnknownDatabaseError,
  UnsafeTopologyError,
  UnsupportedFormError,
} from "./errors.js";
export type {
  BrokerEventListener,
  BrokerEventMap,
  BrokerEventName,
  ClaimErrorEvent,
  ClaimedEvent,
  FailedEvent,
  LeaseLostEvent,
  RowEvent,
  SettledEvent,
  SettleErrorEvent,
  SubscriptionEvent,
} from "./events.js";
export {
  type AnyLogger,
  consoleLogger,
  type LogDetails,
  type Logger,
  type ObjectFirstLogger,
  silentLogger,
} from "./logger.js";
export {
  type CountRowsOptions,
  cancel,
  countRows,
  DEFAULT_OPERATION_BATCH,
  DEFAULT_PAGE_SIZE,
  deadLetterTable,
  keyColumnOf,
  type ListRowsOptions,
  listRows,
  MAX_OPERATION_BATCH,
  type OperationProgress,
  type OperationsTarget,
  type PruneOptions,
  type PruneResult,
  prune,
  type QueueRow,
  type RedriveFilter,
  type RedriveOptions,
  type RedriveResult,
  type RedriveSelection,
  type RowActionOptions,
  type RowActionResult,
  type RowCount,
  type RowDetailOptions,
  type RowPage,
  redrive,
  remove,
  retryNow,
  rowDetail,
} from "./operations.js";
export { type RowFilter, type RowHolder, type RowState, rowStates } from "./operations-driver.js";
export {
  type AckOutcome,
  ack,
  type DeadLetterOutcome,
  type DropOutcome,
  deadLetter,
  drop,
  isOutcome,
  type Outcome,
  type RetryAfterOutcome,
  type RetryOutcome,
  retry,
  retryAfter,
} from "./outcomes.js";
export {
  type CappedCount,
  DEFAULT_IN_WORK_LIMIT,
  DEFAULT_STATUS_CAP,
  formatCount,
  type GroupCounts,
  type GroupStatus,
  type InWorkHolder,
  type InWorkOptions,
  type InWorkRow,
  type InWorkScope,
  listInWork,
  type QueueStatus,
  type QueueStatusOptions,
  readQueueStatus,
} from "./queue-status.js";
export type { Headers, RowId } from "./rows.js";
export {
  MAX_SCHEDULE_NAME_LENGTH,
  type ScheduledPayload,
  type ScheduleOptions,
  type ScheduleOptionsFor,
  type ScheduleSettings,
} from "./schedule-options.js";
export { LATE_TICK_MS, LEDGER_MARGIN_MS, type Schedule } from "./schedule-runner.js";
export { MAX_TICKS_AT_ONCE, parseTicks, type TickSeries } from "./schedule-ticks.js";
export { DEFAULT_SHUTDOWN_SIGNALS, type HandleSignalsOption } from "./signals.js";
export type { StandardSchemaV1 } from "./standard-schema.js";
export {
  DEFAULT_STARTUP_RETRY_MS,
  STARTUP_RETRY_FIRST_PAUSE_MS,
  STARTUP_RETRY_MAX_PAUSE_MS,
  type StartupRetryOptions,
} from "./startup-retry.js";
export type { Subscription, SubscriptionStats } from "./subscription.js";
export {
  type ClaimFormName,
  type ColumnRole,
  DEFAULT_LEASE_SECONDS,
  type DeadLetterTarget,
  type DescribedExtra,
  type DescribedInput,
  type DescribedPayload,
  defineTable,
  type ExtraColumnsOf,
  type HeadersOf,
  type IsolationLevel,
  isolationLevels,
  type JsonInput,
  type KeyPart,
  type KeyTemplate,
  MAX_LEASE_SECONDS,
  type PayloadOf,
  type PayloadType,
  type PublishPayloadOf,
  type TableColumns,
  type TableDefinition,
  type TableDescription,
  type TableTypes,
  type TransactionMode,
  transactionModes,
} from "./table.js";
export type { DeliveryScope, Instrumentation, PublishScope } from "./telemetry.js";
export type { TransactionBody, TransactionClientOf, TransactionResult } from "./transactional.js";
export {
  type PublishOutcome,
  type PublishResult,
  type UniqueConflict,
  type UniqueMode,
  type UniqueOptions,
  uniqueModes,
} from "./unique.js";
