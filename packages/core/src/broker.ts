/**
 * The broker: subscribe handlers to tables, publish rows, close cleanly.
 *
 * @module
 */
import type { BackoffOptions } from "./backoff.js";
import type { Handler } from "./delivery.js";
import type { Driver, WakeListener } from "./driver.js";
import { ClosedError, DeclarationError, InvalidArgumentError, UnsupportedFormError } from "./errors.js";
import { consoleLogger, type Logger } from "./logger.js";
import { encodeHeaders, encodePayload } from "./payload.js";
import type { Headers, PublishRow, RowId } from "./rows.js";
import { type Subscription, SubscriptionRunner, type SubscriptionSettings } from "./subscription.js";
import {
  type ClaimFormName,
  type DeadLetterTarget,
  type TableDefinition,
  validateRetirement,
} from "./table.js";
import { onWake, wake, wakeKey } from "./wake.js";

/** How a broker is made. */
export interface BrokerOptions {
  /** The database driver. The broker closes it on {@link Broker.close}. */
  readonly driver: Driver;
  /** Where warnings and background failures go. Default: the console. */
  readonly logger?: Logger;
}

/** The options of {@link Broker.subscribe}. */
export interface SubscribeOptions {
  /** The group to claim from. Default: rows whose group is NULL (every row, on a table without groups). */
  readonly group?: string | null;
  /** How many handlers run in parallel. Default 1. */
  readonly workers?: number;
  /**
   * How many rows one claim takes at most. Default: `workers` in the lease and advisory lock
   * forms (a claim fills every free worker; each row still settles on its own), 1 in the row lock
   * form (a row lock batch shares one transaction, which commits once every row of the batch has
   * settled). A claim never takes more rows than there are free workers, so every claimed row
   * starts at once and no row waits, held, for a worker: `batch` larger than `workers` is refused
   * with a `DeclarationError`.
   */
  readonly batch?: number;
  /** How long to wait between claims that found nothing, in milliseconds. Default 1000. */
  readonly pollInterval?: number;
  /** Overrides the table's `maxAttempts` (set it with `deadLetter`). */
  readonly maxAttempts?: number;
  /** Overrides the table's `deadLetter` (set it with `maxAttempts`). */
  readonly deadLetter?: DeadLetterTarget;
  /** The delay after a handler throws. Default: 1 s doubling up to 1 h. */
  readonly backoff?: BackoffOptions;
  /** Lease form: extend every lease in work each half lease. Default true. */
  readonly extendLeases?: boolean;
  /** Listen for publishes from other processes where the driver can (`Driver.listen`). Default true. */
  readonly listen?: boolean;
}

/** The options of {@link Broker.publish}. */
export interface PublishOptions {
  /** The row's group. Needs a group column. */
  readonly group?: string | null;
  /** When the row is due. Needs a runAt column. Default: now. */
  readonly runAt?: Date;
  /** The row's priority (smaller goes first). Needs a priority column. */
  readonly priority?: number;
  /** Headers carried beside the payload. Needs a headers column. */
  readonly headers?: Headers;
  /** Values for the table's `extraColumns` (for example the columns an advisory key names). */
  readonly values?: Readonly<Record<string, unknown>>;
}

/** One message of {@link Broker.publishMany}. */
export interface PublishMessage extends PublishOptions {
  readonly payload: unknown;
}

/** Where a publish runs. */
export interface PublishTarget {
  /**
   * The caller's own client inside a transaction it opened: the row exists only if that
   * transaction commits. Which client types a driver takes is in its README.
   */
  readonly client?: unknown;
}

/**
 * Claims, runs and settles rows of tables described with `defineTable`, on one driver.
 *
 * @example
 * const broker = createBroker({ driver });
 * await broker.subscribe(jobs, async (delivery) => {
 *   await send(delivery.payload);
 *   return ack();
 * }, { workers: 4 });
 * await broker.publish(jobs, { to: "a@example.com" });
 * await broker.close();
 */
export class Broker {
  /** The driver the broker runs on. */
  readonly driver: Driver;
  readonly #logger: Logger;
  readonly #subscriptions = new Set<SubscriptionRunner<unknown>>();
  readonly #listeners = new Set<WakeListener>();
  #closing: Promise<void> | undefined;

  constructor(options: BrokerOptions) {
    if (
      typeof options !== "object" ||
      options === null ||
      typeof options.driver !== "object" ||
      options.driver === null
    ) {
      throw new InvalidArgumentError(
        "createBroker() needs { driver }: a driver from @rowclaim/postgres, @rowclaim/mysql or @rowclaim/sqlite.",
      );
    }
    this.driver = options.driver;
    this.#logger = options.logger ?? consoleLogger;
  }

  /** Whether {@link Broker.close} has been called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Starts claiming rows of `table` and running `handler` on each. Resolves once the driver
   * checked the server and the table and the claim loop runs.
   *
   * @throws {UnsupportedFormError} the driver does not offer the table's form (or FIFO in it).
   * @throws {DeclarationError} the options cannot work with the table.
   * @throws {SchemaError} the table or a described column is missing.
   * @throws {ServerTooOldError} the server is older than the form needs.
   * @throws {ClosedError} the broker is closed.
   */
  async subscribe<P = unknown>(
    described: TableDefinition,
    handler: Handler<P>,
    options: SubscribeOptions = {},
  ): Promise<Subscription> {
    this.#assertOpen(described);
    if (typeof handler !== "function") {
      throw new InvalidArgumentError(
        `subscribe(${described.name}, handler): the handler must be a function.`,
        {
          table: described.name,
        },
      );
    }
    this.#assertOffered(described);
    const settings = this.#settings(described, options);
    // The driver checks and prepares what this subscription will do, so it sees the dead-letter
    // target the subscription's options may have put in place of the table's.
    const table: TableDefinition =
      settings.maxAttempts === described.maxAttempts && settings.deadLetter === described.deadLetter
        ? described
        : Object.freeze({ ...described, maxAttempts: settings.maxAttempts, deadLetter: settings.deadLetter });
    const claimer = await this.driver.open(table, { group: settings.group, logger: this.#logger });
    if (claimer.form !== table.form) {
      await claimer.close();
      throw new UnsupportedFormError(
        `Driver "${this.driver.name}" opened a ${claimer.form} claimer for table "${table.name}", which takes the ${table.form} form. This is a bug in the driver.`,
        { table: table.name },
      );
    }
    if (this.closed) {
      await claimer.close();
      this.#assertOpen(table);
    }
    const key = wakeKey(this.driver.dialect, table);
    let removeWaker = (): void => {};
    let listener: WakeListener | undefined;
    const runner: SubscriptionRunner<P> = new SubscriptionRunner<P>({
      table,
      claimer,
      handler,
      settings,
      logger: this.#logger,
      onStopped: () => {
        removeWaker();
        this.#subscriptions.delete(runner as SubscriptionRunner<unknown>);
        if (listener !== undefined) {
          this.#listeners.delete(listener);
          void listener
            .close()
            .catch((error: unknown) => this.#logger.error("Closing a wake-up listener failed.", { error }));
        }
      },
    });
    removeWaker = onWake(key, () => runner.wake());
    if (options.listen !== false && this.driver.listen !== undefined) {
      try {
        listener = await this.driver.listen(table, () => runner.wake());
        this.#listeners.add(listener);
      } catch (error) {
        this.#logger.warn(
          `Table "${table.name}": listening for publishes from other processes failed; polling instead.`,
          { error },
        );
      }
    }
    this.#subscriptions.add(runner as SubscriptionRunner<unknown>);
    runner.start();
    return runner;
  }

  /**
   * Inserts one row and wakes the table's subscriptions in this process. Returns the row's id.
   *
   * @throws {InvalidArgumentError} the payload or an option does not fit the table.
   * @throws {ClosedError} the broker is closed.
   */
  async publish(
    table: TableDefinition,
    payload: unknown,
    options: PublishOptions & PublishTarget = {},
  ): Promise<RowId> {
    const { client, ...message } = options;
    const ids = await this.publishMany(
      table,
      [{ ...message, payload }],
      client === undefined ? {} : { client },
    );
    return ids[0] as RowId;
  }

  /**
   * Inserts several rows in one statement where the driver can, and wakes the table's
   * subscriptions in this process. Returns the ids in order. Every message is checked before
   * anything is written: one bad message writes nothing.
   */
  async publishMany(
    table: TableDefinition,
    messages: readonly PublishMessage[],
    target: PublishTarget = {},
  ): Promise<readonly RowId[]> {
    this.#assertOpen(table);
    if (!Array.isArray(messages)) {
      throw new InvalidArgumentError(`publishMany(${table.name}, messages): messages must be an array.`, {
        table: table.name,
      });
    }
    if (target.client !== undefined && !this.driver.capabilities.transactionalPublish) {
      throw new InvalidArgumentError(
        `Driver "${this.driver.name}" cannot publish inside a caller's transaction; leave out { client }.`,
        { table: table.name },
      );
    }
    if (messages.length === 0) return [];
    const now = new Date();
    const rows = messages.map((message) => this.#encode(table, message, now));
    const ids = await this.driver.publish(
      table,
      rows,
      target.client === undefined ? {} : { client: target.client },
    );
    wake(wakeKey(this.driver.dialect, table));
    return ids;
  }

  /**
   * Stops claiming, lets deliveries in work settle (up to `timeout` ms, default 30 s), gives up
   * the rest (their settlements fail with `CLOSED`; row locks roll back, advisory keys unlock,
   * leases are left to run out), releases every lock and closes the driver. Resolves only when
   * the broker holds no connection. Calling it again returns the same promise.
   */
  close(options: { timeout?: number } = {}): Promise<void> {
    this.#closing ??= this.#close(options.timeout ?? 30_000);
    return this.#closing;
  }

  async #close(timeout: number): Promise<void> {
    await Promise.allSettled([...this.#subscriptions].map((subscription) => subscription.stop({ timeout })));
    await Promise.allSettled([...this.#listeners].map((listener) => listener.close()));
    this.#listeners.clear();
    await this.driver.close();
  }

  #assertOpen(table: TableDefinition): void {
    if (this.closed) {
      throw new ClosedError(
        `The broker is closed; table "${table.name}" cannot be used through it. Create a new broker.`,
        {
          table: table.name,
        },
      );
    }
  }

  #assertOffered(table: TableDefinition): void {
    const { capabilities, name } = this.driver;
    if (!capabilities.forms.includes(table.form)) {
      const offered = capabilities.forms.map((form) => formAdvice[form]).join("; or ");
      throw new UnsupportedFormError(
        `Table "${table.name}" takes the ${formNames[table.form]} form, which the ${name} driver does not offer. It offers: ${offered}.`,
        { table: table.name },
      );
    }
    if (table.fifo && !capabilities.fifo.includes(table.form)) {
      throw new UnsupportedFormError(
        `Table "${table.name}" is FIFO in the ${formNames[table.form]} form, which the ${name} driver does not guard. FIFO is offered in: ${capabilities.fifo.map((form) => formNames[form]).join(", ") || "no form"}.`,
        { table: table.name },
      );
    }
    if (table.isolation !== undefined && !capabilities.isolationLevels.includes(table.isolation)) {
      throw new DeclarationError(
        `Table "${table.name}" names isolation "${table.isolation}", which the ${name} driver does not take. ${capabilities.isolationLevels.length === 0 ? "Remove it" : `Use one of ${capabilities.isolationLevels.join(", ")}`}${capabilities.transactionModes.length > 0 ? ` (this driver takes mode: ${capabilities.transactionModes.join(", ")})` : ""}.`,
        { table: table.name },
      );
    }
    if (table.mode !== undefined && !capabilities.transactionModes.includes(table.mode)) {
      throw new DeclarationError(
        `Table "${table.name}" names mode "${table.mode}", which the ${name} driver does not take. ${capabilities.transactionModes.length === 0 ? "Remove it (mode is for SQLite)" : `Use one of ${capabilities.transactionModes.join(", ")}`}${capabilities.isolationLevels.length > 0 ? `; this driver takes isolation: ${capabilities.isolationLevels.join(", ")}` : ""}.`,
        { table: table.name },
      );
    }
  }

  #settings(table: TableDefinition, options: SubscribeOptions): SubscriptionSettings {
    const fail = (problem: string, fix: string): never => {
      throw new DeclarationError(`subscribe(${table.name}): ${problem}. ${fix}`, { table: table.name });
    };
    const whole = (value: number | undefined, name: string, fallback: number): number => {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
        fail(`${name} ${String(value)} is not a whole number of at least 1`, `Set ${name} to 1 or more.`);
      return value;
    };
    const group = options.group ?? null;
    if (group !== null) {
      if (typeof group !== "string") fail("group must be a string", "Name the group to claim from.");
      if (table.columns.group === undefined)
        fail(
          `group "${group}" is given but the table has no group column`,
          "Name columns.group, or leave group out.",
        );
    }
    const pollInterval = options.pollInterval ?? 1000;
    if (typeof pollInterval !== "number" || !Number.isFinite(pollInterval) || pollInterval < 1) {
      fail(
        `pollInterval ${String(pollInterval)} is not a number of milliseconds of at least 1`,
        "Set pollInterval in milliseconds.",
      );
    }
    const overrides = options.maxAttempts !== undefined || options.deadLetter !== undefined;
    const retirement = overrides
      ? validateRetirement(
          { maxAttempts: options.maxAttempts, deadLetter: options.deadLetter },
          table.columns,
          fail,
        )
      : { maxAttempts: table.maxAttempts, deadLetter: table.deadLetter };
    const backoff = options.backoff ?? {};
    for (const [name, value] of Object.entries(backoff)) {
      if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
        fail(
          `backoff.${name} ${String(value)} is not a number of milliseconds`,
          `Set backoff.${name} to 0 or more.`,
        );
      }
    }
    const workers = whole(options.workers, "workers", 1);
    // A lease or advisory claim may fill every free worker at once: its rows settle one by one.
    // A row lock batch shares one transaction, so that form claims one row at a time unless asked.
    const batch = whole(options.batch, "batch", table.form === "rowLock" ? 1 : workers);
    if (batch > workers) {
      fail(
        `batch ${batch} is larger than workers ${workers}`,
        "A claim never takes more rows than there are free workers, so every claimed row starts at once: set workers to at least batch.",
      );
    }
    return {
      group,
      workers,
      batch,
      pollInterval,
      maxAttempts: retirement.maxAttempts,
      deadLetter: retirement.deadLetter,
      backoff,
      extendLeases: options.extendLeases ?? true,
    };
  }

  #encode(table: TableDefinition, message: PublishMessage, now: Date): PublishRow {
    const fail = (problem: string): never => {
      throw new InvalidArgumentError(`publish(${table.name}): ${problem}`, { table: table.name });
    };
    if (typeof message !== "object" || message === null)
      fail("each message must be an object { payload, … }.");
    const { columns } = table;
    const group = message.group ?? null;
    if (group !== null) {
      if (typeof group !== "string") fail("group must be a string.");
      if (columns.group === undefined) fail(`group "${group}" is given but the table has no group column.`);
    }
    let runAt: Date | null = null;
    if (message.runAt !== undefined) {
      if (!(message.runAt instanceof Date) || Number.isNaN(message.runAt.getTime()))
        fail("runAt must be a valid Date.");
      if (columns.runAt === undefined) fail("runAt is given but the table has no runAt column.");
      runAt = message.runAt;
    } else if (columns.runAt !== undefined) {
      runAt = now;
    }
    let priority: number | null = null;
    if (message.priority !== undefined) {
      if (typeof message.priority !== "number" || !Number.isSafeInteger(message.priority))
        fail("priority must be a whole number.");
      if (columns.priority === undefined) fail("priority is given but the table has no priority column.");
      priority = message.priority;
    }
    if (message.headers !== undefined && columns.headers === undefined)
      fail("headers are given but the table has no headers column.");
    const values = message.values ?? {};
    if (typeof values !== "object" || values === null)
      fail("values must be an object of extra column values.");
    for (const column of Object.keys(values)) {
      if (!table.extraColumns.includes(column)) {
        fail(
          `values names column "${column}", which is not in the table's extraColumns (${table.extraColumns.join(", ") || "none"}).`,
        );
      }
    }
    return {
      payload: encodePayload(table, message.payload),
      group,
      runAt,
      priority,
      headers: encodeHeaders(table, message.headers),
      values,
    };
  }
}

const formNames: Record<ClaimFormName, string> = {
  rowLock: "row lock",
  lease: "lease",
  advisory: "advisory lock",
};

const formAdvice: Record<ClaimFormName, string> = {
  rowLock: "row lock (name neither columns.lockedUntil nor advisoryLock)",
  lease: "lease (name a columns.lockedUntil column)",
  advisory: 'advisory lock (set advisoryLock: "…{column}…")',
};

/** Creates a {@link Broker}. */
export function createBroker(options: BrokerOptions): Broker {
  return new Broker(options);
}
