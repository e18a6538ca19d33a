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
} from "./broker.js";
import { DeclarationError, InvalidArgumentError } from "./errors.js";
import { DEFAULT_TIMEOUT_GRACE_MS, type HandlerTimeoutSettings, MAX_TIMEOUT_MS } from "./handler-timeout.js";
import type { Logger } from "./logger.js";
import type { StartupRetryOptions } from "./startup-retry.js";
import type { ClaimFormName, TableDefinition, TableDescription } from "./table.js";
import type { UniqueOptions } from "./unique.js";

/** Every key of `T` (optional ones included), as an object whose values are `true`. */
type KeySet<T> = { readonly [K in keyof Required<T>]: true };

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

/** The keys of `createBroker()`'s `startupRetry`. */
export const startupRetryOptionKeys = Object.freeze(
  Object.keys({ timeout: true } satisfies KeySet<StartupRetryOptions>),
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

/** The keys a table description takes. */
export const tableDescriptionKeys = Object.freeze(
  Object.keys({
    name: true,
    schema: true,
    columns: true,
    extraColumns: true,
    payloadType: true,
    payloadSchema: true,
    advisoryLock: true,
    fifo: true,
    lease: true,
    isolation: true,
    mode: true,
    maxAttempts: true,
    deadLetter: true,
  } satisfies KeySet<TableDescription>),
);

/**
 * Returns the first key of `given` that is not in `allowed`, with the advice to show: the nearest
 * valid key when one is close (`did you mean \`priority\`?`), else the list of valid keys.
 * `undefined` when every key is known. Keys whose value is `undefined` are checked too: a
 * misspelled key is a mistake whatever its value.
 */
export function unknownKey(
  given: object,
  allowed: readonly string[],
): { readonly key: string; readonly advice: string } | undefined {
  for (const key of Object.keys(given)) {
    if (allowed.includes(key)) continue;
    const nearest = nearestKey(key, allowed);
    const advice =
      nearest === undefined
        ? `The keys are ${allowed.map((name) => `\`${name}\``).join(", ")}.`
        : `Did you mean \`${nearest}\`?`;
    return { key, advice };
  }
  return undefined;
}

/**
 * Every key of every member of an option type (a union such as `{ pool } | { url }` included),
 * each `true`: a driver writes its key list as such an object with `satisfies`, so that an option
 * added to the type but not to the list fails the build.
 */
export type OptionKeySet<T> = { readonly [K in T extends unknown ? keyof T : never]-?: true };

/**
 * Refuses an option object with a key not in `allowed`, as `createBroker()` refuses its own: for
 * driver factories (`call` names the factory, for example `"createMysqlDriver()"`).
 *
 * @throws {InvalidArgumentError} naming the key and the nearest valid one (or the valid keys).
 */
export function refuseUnknownOptions(given: object, allowed: readonly string[], call: string): void {
  const unknown = unknownKey(given, allowed);
  if (unknown === undefined) return;
  throw new InvalidArgumentError(`${call}: unknown option \`${unknown.key}\`. ${unknown.advice}`);
}

/**
 * The valid key nearest to `key` by edit distance (case-insensitive), when it is near enough to
 * be a misspelling: at most a third of the key's length, and at least one edit. `undefined`
 * otherwise.
 */
export function nearestKey(key: string, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const limit = Math.max(1, Math.floor(Math.max(key.length, 3) / 3));
  return bestDistance <= limit ? best : undefined;
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i += 1) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j += 1) row.push(i === 0 ? j : 0);
    rows.push(row);
  }
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, at(i - 2, j - 2) + 1);
      }
      (rows[i] as number[])[j] = value;
    }
  }
  return at(a.length, b.length);
}

/**
 * How a value is named in a refusal: `null`, `undefined`, `an array`, `NaN`, `a string ("4")`,
 * `a number (2.5)`, `an object`, … — the type it has, and for short primitives the value.
 */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid Date" : "a Date";
  switch (typeof value) {
    case "string": {
      const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
      return `a string (${JSON.stringify(shown)})`;
    }
    case "number":
      return Number.isNaN(value) ? "NaN" : `a number (${String(value)})`;
    case "bigint":
      return `a bigint (${String(value)}n)`;
    case "boolean":
      return `a boolean (${String(value)})`;
    case "object":
      return "an object";
    default:
      return `a ${typeof value}`;
  }
}

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
  const form = table.form === "rowLock" ? "row lock" : table.form === "lease" ? "lease" : "advisory lock";
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
 * Checks a subscription's `timeout` and `timeoutGrace` (milliseconds, whole, at least 1 and 0,
 * at most what one timer holds) and resolves them; `undefined` without a `timeout`. A grace
 * without a timeout is refused.
 */
export function checkHandlerTimeout(
  options: { readonly timeout?: number | undefined; readonly timeoutGrace?: number | undefined },
  fail: (problem: string, fix: string) => never,
): HandlerTimeoutSettings | undefined {
  const { timeout, timeoutGrace } = options;
  const check = (value: unknown, name: string, least: number): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < least || value > MAX_TIMEOUT_MS) {
      fail(
        `${name} must be a whole number of milliseconds from ${least} to ${MAX_TIMEOUT_MS}, got ${describeValue(value)}`,
        `Set ${name} in milliseconds.`,
      );
    }
    return value as number;
  };
  if (timeout === undefined) {
    if (timeoutGrace !== undefined)
      fail("timeoutGrace is set without a timeout", "Set timeout too, or leave timeoutGrace out.");
    return undefined;
  }
  return {
    timeoutMs: check(timeout, "timeout", 1),
    graceMs: timeoutGrace === undefined ? DEFAULT_TIMEOUT_GRACE_MS : check(timeoutGrace, "timeoutGrace", 0),
  };
}
