/**
 * `@rowclaim/core`: a job and message queue kept in your own SQL tables. Describe a table with
 * {@link defineTable}, create a {@link Broker} on a driver, subscribe handlers and publish rows.
 *
 * @packageDocumentation
 */
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
  type ValuesFor,
} from "./broker.js";
export {
  ClockSkewMonitor,
  type ClockSkewOptions,
  type ClockSkewReading,
  clockSkewDefaults,
} from "./clock-skew.js";
export { acquireWithin, type ConnectionWait } from "./connection-wait.js";
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
export type { ClaimedRow, Headers, PublishRow, RowId } from "./rows.js";
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
