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
  createBroker,
  type PublishMessage,
  type PublishOptions,
  type PublishTarget,
  type SubscribeOptions,
} from "./broker.js";
export type { Delivery, Handler, HandlerResult } from "./delivery.js";
export {
  type Driver,
  type DriverCapabilities,
  type DriverDefinition,
  type DriverPublishOptions,
  defineDriver,
  driverCapabilities,
  type OpenOptions,
  type WakeListener,
} from "./driver.js";
export {
  BatchRolledBackError,
  BrokerError,
  type BrokerErrorCode,
  type BrokerErrorOptions,
  ClosedError,
  DeclarationError,
  InvalidArgumentError,
  LeaseLostError,
  SchemaError,
  ServerTooOldError,
  UnsupportedFormError,
} from "./errors.js";
export type {
  AdvisoryClaimer,
  Claimed,
  Claimer,
  ClaimRequest,
  LeaseClaimer,
  LeaseClaimRequest,
  RowLockBatch,
  RowLockClaimer,
} from "./forms.js";
export { consoleLogger, type Logger, silentLogger } from "./logger.js";
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
export type {
  DeleteSettlement,
  MarkProcessedSettlement,
  MoveToGroupSettlement,
  MoveToTableSettlement,
  ReleaseSettlement,
  Settlement,
} from "./settlement.js";
export type { Subscription, SubscriptionStats } from "./subscription.js";
export {
  type ClaimFormName,
  type ColumnRole,
  DEFAULT_LEASE_SECONDS,
  type DeadLetterTarget,
  defineTable,
  type IsolationLevel,
  isolationLevels,
  type KeyPart,
  type KeyTemplate,
  type PayloadType,
  type TableColumns,
  type TableDefinition,
  type TableDescription,
  type TransactionMode,
  transactionModes,
} from "./table.js";
export {
  type AdvisoryToken,
  ceilToSecond,
  type LeaseToken,
  leaseExpiry,
  type RowLockToken,
  type SettlementToken,
} from "./tokens.js";
