/**
 * Checks of the option objects users pass (`createBroker`, `subscribe`, `publish`,
 * `publishMany`, `defineTable`): an unknown key is refused, naming the nearest valid key (a
 * misspelled `priorty` must not be silently ignored), and a value of the wrong type is refused
 * naming the type it has (`workers: "4"` is "a string", not "not a whole number").
 *
 * Which error a refusal raises follows what is refused: a table description or a subscription's
 * options are declarations (`DeclarationError`, code `DECLARATION`); `createBroker` and
 * `publish` options are arguments (`InvalidArgumentError`, code `INVALID_ARGUMENT`).
 *
 * The key lists are checked against the option types at compile time (`satisfies`), so adding
 * an option to one of the interfaces without listing it here fails the build.
 *
 * @module
 */
import type { BackoffOptions } from "./backoff.js";
import type {
  BrokerOptions,
  PublishMessage,
  PublishOptions,
  PublishTarget,
  SubscribeOptions,
} from "./broker-options.js";
import { DeclarationError } from "./errors.js";
import { formLabels } from "./form-labels.js";
import { DEFAULT_TIMEOUT_GRACE_MS, type HandlerTimeoutSettings, MAX_TIMEOUT_MS } from "./handler-timeout.js";
import type { Logger } from "./logger.js";
import { describeValue, type KeySet } from "./option-keys.js";
import type { ClaimFormName, TableDefinition } from "./table.js";
import type { UniqueOptions } from "./unique.js";

/** The keys `createBroker()` takes. */
export const brokerOptionKeys = Object.freeze(
  Object.keys({
    driver: true,
    logger: true,
    clock: true,
    clockSkew: true,
    instrumentation: true,
    handleSignals: true,
    startupRetry: true,
  } satisfies KeySet<BrokerOptions>),
);

/** The keys `subscribe()` takes. */
export const subscribeOptionKeys = Object.freeze(
  Object.keys({
    group: true,
    workers: true,
    batch: true,
    prefetch: true,
    pollInterval: true,
    maxAttempts: true,
    deadLetter: true,
    backoff: true,
    extendLeases: true,
    listen: true,
    transactional: true,
    rateLimit: true,
    timeout: true,
    timeoutGrace: true,
    timeoutColumn: true,
  } satisfies KeySet<SubscribeOptions>),
);

/** The keys of `subscribe()`'s `backoff`. */
export const backoffOptionKeys = Object.freeze(
  Object.keys({ baseMs: true, maxMs: true } satisfies KeySet<BackoffOptions>),
);

const messageKeys = {
  group: true,
  runAt: true,
  priority: true,
  headers: true,
  values: true,
  key: true,
  mode: true,
  period: true,
} satisfies KeySet<PublishOptions & UniqueOptions>;

/** The keys `publish()` takes (a message's options and the target `client`). */
export const publishOptionKeys = Object.freeze(
  Object.keys({ ...messageKeys, client: true } satisfies KeySet<
    PublishOptions & UniqueOptions & PublishTarget
  >),
);

/** The keys of one `publishMany()` message. */
export const publishMessageKeys = Object.freeze(
  Object.keys({ ...messageKeys, payload: true } satisfies KeySet<PublishMessage & UniqueOptions>),
);

/** The keys of `publishMany()`'s target. */
export const publishTargetKeys = Object.freeze(Object.keys({ client: true } satisfies KeySet<PublishTarget>));

/**
 * Connections a subscription of `form` holds with `workers` handlers: one per delivery in work
 * in the row lock and advisory lock forms (its transaction, its key's session), plus one for the
 * claims, publishes and lease extensions that run beside them; one in the lease form.
 */
export function connectionsNeeded(form: ClaimFormName, workers: number): number {
  return form === "lease" ? 1 : workers + 1;
}

/**
 * Refuses a subscription whose form needs more connections than the pool holds: such a pool
 * would leave a handler that publishes (or the next claim) waiting for a connection no one
 * returns. Warns, without refusing, when this subscription fits but the driver's open
 * subscriptions together need more than the pool holds.
 *
 * Returns the connections this subscription needs, for the driver's running total.
 * Drivers call it from `open` where they can see their pool's size.
 *
 * @throws {DeclarationError} the pool is smaller than this subscription needs.
 */
export function checkPoolSize(
  table: TableDefinition,
  max: number | undefined,
  workers: number,
  alreadyNeeded: number,
  logger: Logger,
): number {
  const needed = connectionsNeeded(table.form, workers);
  if (max === undefined) return needed;
  const form = formLabels[table.form];
  if (needed > max) {
    throw new DeclarationError(
      `subscribe(${table.name}): the pool holds at most ${max} connections, and ${workers} workers in the ${form} form need ${needed} (one per delivery in work, plus one for claims and publishes). Make the pool's max at least ${needed}, or run at most ${Math.max(1, max - 1)} workers.`,
      { table: table.name },
    );
  }
  if (alreadyNeeded + needed > max) {
    logger.warn(
      `Table "${table.name}" (${form} form): the driver's open subscriptions together need ${alreadyNeeded + needed} connections and the pool holds ${max}; when all are busy, waits for a connection end in CONNECTION_TIMEOUT. Make the pool larger.`,
    );
  }
  return needed;
}

/**
 * Checks a subscription's `timeout`, `timeoutGrace` (milliseconds, whole, at least 1 and 0, at
 * most what one timer holds) and `timeoutColumn` (one of the table's extra columns) and resolves
 * them; `undefined` with neither a `timeout` nor a `timeoutColumn`. A grace alone is refused.
 */
export function checkHandlerTimeout(
  options: {
    readonly timeout?: number | undefined;
    readonly timeoutGrace?: number | undefined;
    readonly timeoutColumn?: string | undefined;
  },
  fail: (problem: string, fix: string) => never,
  table?: TableDefinition,
): HandlerTimeoutSettings | undefined {
  const { timeout, timeoutGrace, timeoutColumn } = options;
  const check = (value: unknown, name: string, least: number): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < least || value > MAX_TIMEOUT_MS) {
      fail(
        `${name} must be a whole number of milliseconds from ${least} to ${MAX_TIMEOUT_MS}, got ${describeValue(value)}`,
        `Set ${name} in milliseconds.`,
      );
    }
    return value as number;
  };
  if (timeoutColumn !== undefined) {
    const extra = table?.extraColumns ?? [];
    if (typeof timeoutColumn !== "string" || !extra.includes(timeoutColumn)) {
      fail(
        `timeoutColumn ${describeValue(timeoutColumn)} is not one of the table's extraColumns (${extra.length === 0 ? "it has none" : extra.join(", ")})`,
        "Add the column to the table and to its extraColumns, or leave timeoutColumn out.",
      );
    }
  }
  if (timeout === undefined && timeoutColumn === undefined) {
    if (timeoutGrace !== undefined)
      fail("timeoutGrace is set without a timeout", "Set timeout too, or leave timeoutGrace out.");
    return undefined;
  }
  return {
    timeoutMs: timeout === undefined ? undefined : check(timeout, "timeout", 1),
    graceMs: timeoutGrace === undefined ? DEFAULT_TIMEOUT_GRACE_MS : check(timeoutGrace, "timeoutGrace", 0),
    ...(timeoutColumn === undefined ? {} : { column: timeoutColumn }),
  };
}

export {
  describeValue,
  nearestKey,
  type OptionKeySet,
  refuseUnknownOptions,
  unknownKey,
} from "./option-keys.js";
export { startupRetryOptionKeys } from "./startup-retry.js";
export { tableDescriptionKeys } from "./table.js";
