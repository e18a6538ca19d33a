/**
 * `@rowclaim/core`: a job and message queue kept in your own SQL tables. Describe a table with
 * {@link defineTable}, create a {@link Broker} on a driver, subscribe handlers and publish rows.
 *
 * @packageDocumentation
 */

export {
  ADVISORY_SLOT_SEPARATOR,
  type AdvisoryLockOptions,
  advisoryRowKey,
  advisorySlotKey,
  advisorySlotKeys,
  freeAdvisorySlots,
  MAX_ADVISORY_LIMIT,
} from "./advisory-limit.js";
export { type BackoffOptions, backoffDelay } from "./backoff.js";
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
export {
  ClockSkewMonitor,
  type ClockSkewOptions,
  type ClockSkewReading,
  clockSkewDefaults,
} from "./clock-skew.js";
export { acquireWithin, type ConnectionWait } from "./connection-wait.js";
export type { ControlRow, ControlStore, RateTake } from "./control-store.js";
export {
  CONTROL_TABLE,
  type ControlScope,
  type ControlState,
  controlTableKey,
  type PauseOptions,
  parseScope,
  type RateLimitOptions,
  type RateState,
  scopeText,
  TABLE_SCOPE,
  UnsupportedControlError,
} from "./controls.js";
export type { Delivery, Handler, HandlerResult } from "./delivery.js";
export {
  type DetectedCapabilities,
  type Driver,
  type DriverCapabilities,
  type DriverDefinition,
  type DriverPublishOptions,
  defineDriver,
  driverCapabilities,
  type OpenOptions,
  type ProbeName,
  type WakeListener,
} from "./driver.js";
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
  type Acks,
  type AdvisoryClaimer,
  type BatchEnd,
  type Claimed,
  type ClaimedWithAcks,
  type Claimer,
  type ClaimRequest,
  type HeldKeyRow,
  type HeldLease,
  type LeaseClaimer,
  type LeaseClaimRequest,
  MAX_COALESCED_SETTLEMENTS,
  type RowLockBatch,
  type RowLockClaimer,
} from "./forms.js";
export { type JsonProblem, jsonProblem } from "./json-check.js";
export {
  type AnyLogger,
  consoleLogger,
  fromObjectFirst,
  isObjectFirstLogger,
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
export {
  type ActionScope,
  type DriverPruneBatch,
  type DriverRedriveBatch,
  type DriverRowAction,
  type DriverRowActionResult,
  type DriverRowCount,
  type DriverRowQuery,
  type OperationsDriver,
  type OperationsFeatures,
  type PruneLock,
  type RowFilter,
  type RowHolder,
  type RowSelection,
  type RowState,
  rowStates,
  type StoredRow,
} from "./operations-driver.js";
export {
  checkPoolSize,
  connectionsNeeded,
  describeValue,
  nearestKey,
  type OptionKeySet,
  refuseUnknownOptions,
  unknownKey,
} from "./options-check.js";
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
export { decodeHeaders, decodePayload, encodeHeaders, encodePayload } from "./payload.js";
export {
  type CappedCount,
  DEFAULT_IN_WORK_LIMIT,
  DEFAULT_STATUS_CAP,
  formatCount,
  type GroupCounts,
  type GroupStatus,
  type InWorkHolder,
  type InWorkOptions,
  type InWorkQuery,
  type InWorkRow,
  type InWorkScope,
  listInWork,
  type QueueStatus,
  type QueueStatusOptions,
  type QueueStatusReader,
  readQueueStatus,
  type StatusQuery,
  type TableCounts,
} from "./queue-status.js";
export { groupCountsOf } from "./queue-status-reader.js";
export type { ClaimedRow, Headers, PublishRow, RowId } from "./rows.js";
export {
  type LedgerSchedule,
  ledgerTick,
  missingLedgerError,
  perLedgerSchema,
  SCHEDULE_LEDGER_TABLE,
  type ScheduleLedger,
} from "./schedule-ledger.js";
export {
  checkSchedule,
  MAX_SCHEDULE_NAME_LENGTH,
  type ScheduledPayload,
  type ScheduleOptions,
  type ScheduleOptionsFor,
  type ScheduleSettings,
  scheduleOptionKeys,
} from "./schedule-options.js";
export {
  LATE_TICK_MS,
  LEDGER_MARGIN_MS,
  MAX_SCHEDULE_SLEEP_MS,
  type Schedule,
} from "./schedule-runner.js";
export { isKnownTimeZone, MAX_TICKS_AT_ONCE, parseTicks, type TickSeries } from "./schedule-ticks.js";
export {
  type AckSettlement,
  type DeleteSettlement,
  isAckSettlement,
  type MarkProcessedSettlement,
  type MoveToGroupSettlement,
  type MoveToTableSettlement,
  type ReleaseSettlement,
  type Settlement,
} from "./settlement.js";
export { DEFAULT_SHUTDOWN_SIGNALS, type HandleSignalsOption } from "./signals.js";
export { isStandardSchema, type StandardSchemaV1 } from "./standard-schema.js";
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
export {
  type AdvisoryToken,
  ceilToSecond,
  type LeaseToken,
  leaseExpiry,
  type RowLockToken,
  type SettlementToken,
} from "./tokens.js";
export {
  assertTransactionalOffered,
  isPromiseLike,
  offersTransactional,
  type TransactionBody,
  type TransactionClientOf,
  type TransactionResult,
  type TransactionWork,
} from "./transactional.js";
export {
  type PublishOutcome,
  type PublishResult,
  UNIQUE_PUBLISH_ATTEMPTS,
  type UniqueConflict,
  type UniqueMode,
  type UniqueOptions,
  type UniquePublishRow,
  uniqueModes,
} from "./unique.js";
