/**
 * `@rowclaim/core/driver`: what a driver author builds on. A service imports `@rowclaim/core`
 * (tables, the broker, outcomes, errors); a database package imports this entry as well:
 *
 * - the contract: {@link Driver}, its {@link DriverCapabilities} and {@link defineDriver}, the
 *   claimer interface of each form ({@link RowLockClaimer}, {@link LeaseClaimer},
 *   {@link AdvisoryClaimer}) with their tokens and {@link Settlement}s, and the optional parts a
 *   driver may offer ({@link OperationsDriver}, {@link QueueStatusReader}, {@link ControlStore},
 *   {@link ScheduleLedger}, {@link WakeListener}, {@link TransactionWork});
 * - the rows that cross it ({@link ClaimedRow}, {@link PublishRow}, {@link UniquePublishRow}) and
 *   their encoding ({@link encodePayload}, {@link decodeClaimedRow}, …);
 * - the policy every driver applies the same way, written once: option checks
 *   ({@link refuseUnknownOptions}, {@link checkPoolSize}), the connections open subscriptions
 *   need ({@link ConnectionBudget}), bounded connection waits
 *   ({@link acquireWithin}), advisory key slots, lease expiries;
 * - the error classes, the same as the root's.
 *
 * Read `@rowclaim/conformance`'s `DRIVERS.md` for how these fit together.
 *
 * @module
 */

export {
  ADVISORY_SLOT_SEPARATOR,
  advisoryRowKey,
  advisorySlotKey,
  freeAdvisorySlots,
} from "./advisory-limit.js";
export { type AnswerId, allHeld, heldAmong, heldAmongOnce, rowIdKey } from "./answered-rows.js";
export { type AttemptCounting, decodeClaimedRow, type RawClaimedRow } from "./claimed-row.js";
export { ConnectionBudget } from "./connection-budget.js";
export { type ConnectionSession, type ConnectionWorkOptions, onConnection } from "./connection-session.js";
export {
  acquireTimeoutOf,
  acquireWithin,
  type ConnectionWait,
  connectionWithin,
  DEFAULT_ACQUIRE_TIMEOUT_MS,
} from "./connection-wait.js";
export { type ControlRow, type ControlStore, controlRowOf, type RateTake } from "./control-store.js";
export { type ControlStatements, ControlTable } from "./control-table.js";
export { CONTROL_TABLE, controlTableKey, scopeText } from "./controls.js";
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
export { DriverLifecycle } from "./driver-lifecycle.js";
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
  type ErrorContext,
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
export { formLabels } from "./form-labels.js";
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
export { firstRowsPerKey, KeyCounts } from "./key-window.js";
export {
  type NativeErrorCode,
  type NativeErrorDetails,
  type NativeErrorSentence,
  type NativeErrorWords,
  nativeErrorNormalizer,
  nativeErrorOf,
} from "./native-errors.js";
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
  type OptionKeySet,
  refuseUnknownOptions,
  unknownKey,
} from "./options-check.js";
export { decodeHeaders, decodePayload, encodeHeaders, encodePayload } from "./payload.js";
export { rowsPerStatement, StatementCache, statementChunks } from "./publish-batches.js";
export { refuseUniquePublishClient } from "./publish-client.js";
export {
  type CappedCount,
  type FoundInWork,
  firstRowPerKey,
  foundInWork,
  type GroupCounts,
  groupCountsOf,
  groupFilterOf,
  type InWorkHolder,
  type InWorkQuery,
  type InWorkRow,
  type InWorkScope,
  type InWorkValues,
  inWorkRowOf,
  type QueueStatusReader,
  type StatusQuery,
  type TableCounts,
} from "./queue-status-reader.js";
export { probeRowLocks, type RowLockProbeSession } from "./row-lock-probe.js";
export type { ClaimedRow, Headers, PublishRow, RowId } from "./rows.js";
export {
  type LedgerSchedule,
  ledgerSchedulesOf,
  ledgerTick,
  missingLedgerError,
  perLedgerSchema,
  SCHEDULE_LEDGER_TABLE,
  type ScheduleLedger,
  type ScheduleLedgerStatements,
} from "./schedule-ledger.js";
export { advisoryRowGone, leaseLostOnSettle } from "./settled-nothing.js";
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
export { DecidedOnce, ProbeFindings, type StartupProbe } from "./startup-probes.js";
export {
  type ActionRow,
  dateOf,
  type HolderValues,
  rowActionResultOf,
  storedRowOf,
} from "./stored-row.js";
export { keepTakenOnFailure, type TakeOutcome, takeInWaves, type WavesEnd } from "./take-waves.js";
export {
  type AdvisoryToken,
  ceilToSecond,
  type LeaseToken,
  leaseExpiry,
  type RowLockToken,
  type SettlementToken,
} from "./tokens.js";
export type { TransactionDialect, TransactionSession, TransactionStep } from "./transaction-session.js";
export { isPromiseLike, type TransactionWork } from "./transactional.js";
export {
  bodyRunning,
  runAdvisoryTransaction,
  runLeaseTransaction,
  runRowLockTransaction,
  type TransactionTarget,
  transactionalLeaseLost,
  transactionalRowGone,
} from "./transactional-runner.js";
export { UNIQUE_PUBLISH_ATTEMPTS, type UniquePublishRow } from "./unique.js";
export { retryUniqueAttempt, type UniqueAttempt } from "./unique-retry.js";
