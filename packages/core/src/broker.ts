import type {
  BrokerOptions,
  PublishMessage,
  PublishMessageFor,
  PublishOptionsFor,
  PublishTarget,
  SubscribeOptions,
  UniquePublishMessageFor,
  UniquePublishOptionsFor,
} from "./broker-options.js";
import { ClaimGate, controlChangeKey } from "./claim-gate.js";
import { ClockSkewMonitor, type ClockSkewOptions } from "./clock-skew.js";
import { assertDriverOpen, markDriverClosed } from "./closed-drivers.js";
import { checkRateLimit, controlStoreOf, readControlState, setPause } from "./control-commands.js";
import { type ControlState, controlTableKey, type PauseOptions } from "./controls.js";
import type { Handler } from "./delivery.js";
import type { Driver, WakeListener } from "./driver.js";
import {
  BrokerError,
  ClosedError,
  CloseTimeoutError,
  DeclarationError,
  InvalidArgumentError,
  UnsupportedFormError,
} from "./errors.js";
import {
  type BrokerEventListener,
  type BrokerEventMap,
  type BrokerEventName,
  BrokerEvents,
} from "./events.js";
import { formLabels } from "./form-labels.js";
import type { Claimer } from "./forms.js";
import { type BrokerLogger, brokerLogger } from "./logger.js";
import {
  backoffOptionKeys,
  brokerOptionKeys,
  checkHandlerTimeout,
  describeValue,
  publishMessageKeys,
  publishOptionKeys,
  publishTargetKeys,
  subscribeOptionKeys,
  unknownKey,
} from "./options-check.js";
import { encodeHeaders, encodePayload } from "./payload.js";
import { RecentDelivery } from "./recent-delivery.js";
import type { Headers, PublishRow, RowId } from "./rows.js";
import { checkSchedule, type ScheduledPayload, type ScheduleOptionsFor } from "./schedule-options.js";
import { type Schedule, ScheduleRunner } from "./schedule-runner.js";
import { closeOnSignals, DEFAULT_SHUTDOWN_SIGNALS } from "./signals.js";
import { checkWithSchema, describeIssues, type StandardSchemaV1 } from "./standard-schema.js";
import { retryStartup, startupRetryTime } from "./startup-retry.js";
import {
  type Subscription,
  type SubscriptionObserver,
  SubscriptionRunner,
  type SubscriptionSettings,
} from "./subscription.js";
import {
  type ClaimFormName,
  type PublishPayloadOf,
  type TableDefinition,
  validateRetirement,
} from "./table.js";
import type { Instrumentation } from "./telemetry.js";
import { assertTransactionalOffered, type TransactionClientOf, transactionMissing } from "./transactional.js";
import { type PublishResult, resolveUnique, type UniqueOptions } from "./unique.js";
import { assertUniquePublish, publishUniqueRows } from "./unique-publish.js";
import { onWake, wake, wakeKey } from "./wake.js";

/**
 * The least time `close({ timeout })` gives the driver's own close once the subscriptions have
 * stopped, in milliseconds, however little of `timeout` is left.
 */
export const CLOSE_GRACE_MS = 1000;

export type {
  BrokerOptions,
  PublishMessage,
  PublishMessageFor,
  PublishOptions,
  PublishOptionsFor,
  PublishTarget,
  SubscribeOptions,
  UniquePublishMessageFor,
  UniquePublishOptionsFor,
  ValuesFor,
} from "./broker-options.js";

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
export class Broker<D extends Driver = Driver> {
  /** The driver the broker runs on. */
  readonly driver: D;
  readonly #logger: BrokerLogger;
  readonly #events: BrokerEvents;
  readonly #instrumentation: Instrumentation | undefined;
  readonly #observer: SubscriptionObserver;
  #removeSignalListeners: (() => void) | undefined;
  readonly #clock: (() => Date) | undefined;
  readonly #clockSkew: ClockSkewOptions | false | undefined;
  readonly #subscriptions = new Set<SubscriptionRunner<unknown, unknown>>();
  readonly #schedules = new Map<string, ScheduleRunner>();
  readonly #listeners = new Set<WakeListener>();
  /** Listeners of stopped subscriptions still closing (their connection not yet returned). */
  readonly #closingListeners = new Set<Promise<void>>();
  #closing: Promise<void> | undefined;
  readonly #startupRetryMs: number;
  /** Aborted by {@link Broker.close}: start-ups waiting to retry stop. */
  readonly #closeSignal = new AbortController();
  /** The most recent handler delivery, kept until the next one or close (`src/recent-delivery.ts`). */
  readonly #recent = new RecentDelivery();

  constructor(options: BrokerOptions & { readonly driver: D }) {
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
    const unknown = unknownKey(options, brokerOptionKeys);
    if (unknown !== undefined) {
      throw new InvalidArgumentError(`createBroker(): unknown option \`${unknown.key}\`. ${unknown.advice}`);
    }
    this.#startupRetryMs = startupRetryTime(options.startupRetry);
    this.driver = options.driver;
    this.#logger = brokerLogger(options.logger);
    this.#events = new BrokerEvents((name, error) =>
      this.#logger.error(`A listener of the broker's "${name}" event threw.`, { err: error }),
    );
    this.#instrumentation = options.instrumentation;
    this.#observer = { events: this.#events, logger: this.#logger, instrumentation: this.#instrumentation };
    const signals = options.handleSignals ?? false;
    if (signals !== false) {
      this.#removeSignalListeners = closeOnSignals(
        signals === true ? DEFAULT_SHUTDOWN_SIGNALS : signals,
        () => this.close(),
        (error) => this.#logger.error("Closing the broker on a signal failed.", { err: error }),
      );
    }
    this.#clock = options.clock;
    this.#clockSkew = options.clockSkew;
  }

  /**
   * Listens to one of the broker's events (see {@link BrokerEventMap}); returns a function that
   * removes the listener. With no listener, the broker builds no event.
   *
   * @example
   * broker.on("settled", ({ table, id, outcome, durationMs }) => metrics.observe(table.name, outcome, durationMs));
   */
  on<Name extends BrokerEventName>(name: Name, listener: BrokerEventListener<Name>): () => void {
    return this.#events.on(name, listener);
  }

  /** Removes a listener added with {@link Broker.on}. */
  off<Name extends BrokerEventName>(name: Name, listener: BrokerEventListener<Name>): void {
    this.#events.off(name, listener);
  }

  /** The subscriptions running now. */
  get subscriptions(): readonly Subscription[] {
    return [...this.#subscriptions];
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
  async subscribe<Payload = unknown, Head = Headers>(
    typedTable: TableDefinition<Payload, Head, string, unknown>,
    handler: Handler<Payload, Head, TransactionClientOf<D>>,
    options: SubscribeOptions = {},
  ): Promise<Subscription> {
    // The table's types are for the compiler; at run time every table is the same.
    const described = typedTable as TableDefinition;
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
    if (options.transactional === true) assertTransactionalOffered(this.driver, described);
    if (settings.rateLimit !== undefined)
      controlStoreOf(this.driver, described, `subscribe(${described.name}, { rateLimit })`);
    // The driver checks and prepares what this subscription will do, so it sees the dead-letter
    // target the subscription's options may have put in place of the table's.
    const table: TableDefinition =
      settings.maxAttempts === described.maxAttempts && settings.deadLetter === described.deadLetter
        ? described
        : Object.freeze({ ...described, maxAttempts: settings.maxAttempts, deadLetter: settings.deadLetter });
    const { claimer, skew } = await retryStartup(() => this.#start(table, settings, options), {
      timeoutMs: this.#startupRetryMs,
      signal: this.#closeSignal.signal,
      logger: this.#logger,
      table: table.name,
    });
    const key = wakeKey(this.driver.dialect, table);
    const gate = this.#gate(table, settings);
    if (settings.rateLimit !== undefined) {
      try {
        await (this.driver.controls as NonNullable<Driver["controls"]>).ensure();
      } catch (error) {
        await claimer.close().catch(() => undefined);
        throw error;
      }
    }
    let removeWaker = (): void => {};
    let listener: WakeListener | undefined;
    const runner: SubscriptionRunner<Payload, Head> = new SubscriptionRunner<Payload, Head>({
      table,
      claimer,
      // The client type is for the compiler; at run time the body receives the driver's client.
      handler: handler as Handler<Payload, Head>,
      settings,
      logger: this.#logger,
      observer: this.#observer,
      recent: this.#recent,
      ...(gate === undefined ? {} : { gate }),
      ...(this.#clock === undefined ? {} : { clock: this.#clock }),
      lease: {
        ...(this.#clock === undefined ? {} : { clock: this.#clock }),
        ...(skew === undefined ? {} : { skew }),
      },
      onStopped: () => {
        removeWaker();
        gate
          ?.close()
          .catch((error: unknown) => this.#logger.error("Closing a control watch failed.", { err: error }));
        this.#subscriptions.delete(runner as SubscriptionRunner<unknown, unknown>);
        if (listener !== undefined) {
          this.#listeners.delete(listener);
          // close() awaits this: it returns only once the listener's connection is back.
          const closing = listener
            .close()
            .catch((error: unknown) =>
              this.#logger.error("Closing a wake-up listener failed.", { err: error }),
            )
            .finally(() => this.#closingListeners.delete(closing));
          this.#closingListeners.add(closing);
        }
      },
    });
    removeWaker = onWake(key, () => runner.wake());
    await gate?.listen(
      controlChangeKey(this.driver.dialect, controlTableKey(table)),
      () => runner.wake(),
      (error) =>
        this.#logger.warn(
          `Table "${table.name}": listening for pauses from other processes failed; reading them every poll interval instead.`,
          { err: error },
        ),
    );
    if (options.listen !== false && this.driver.listen !== undefined) {
      try {
        listener = await this.driver.listen(table, () => runner.wake());
        this.#listeners.add(listener);
      } catch (error) {
        this.#logger.warn(
          `Table "${table.name}": listening for publishes from other processes failed; polling instead.`,
          { err: error },
        );
      }
    }
    this.#subscriptions.add(runner as SubscriptionRunner<unknown, unknown>);
    runner.start();
    return runner;
  }

  /**
   * One attempt at a subscription's start-up: the driver opens its claimer (checking the server
   * and the table), the claimer is checked, and a lease table's clock skew measured. A failed
   * attempt closes what it opened.
   */
  async #start(
    table: TableDefinition,
    settings: SubscriptionSettings,
    options: SubscribeOptions,
  ): Promise<{ claimer: Claimer; skew: ClockSkewMonitor | undefined }> {
    const claimer = await this.driver.open(table, {
      group: settings.group,
      logger: this.#logger,
      workers: settings.workers,
    });
    if (claimer.form !== table.form) {
      await claimer.close();
      throw new UnsupportedFormError(
        `Driver "${this.driver.name}" opened a ${claimer.form} claimer for table "${table.name}", which takes the ${table.form} form. This is a bug in the driver.`,
        { table: table.name },
      );
    }
    if (options.transactional === true && claimer.transaction === undefined) {
      await claimer.close();
      throw transactionMissing(this.driver, table);
    }
    if (this.closed) {
      await claimer.close();
      this.#assertOpen(table);
    }
    let skew: ClockSkewMonitor | undefined;
    if (table.form === "lease" && this.#clockSkew !== false && this.driver.databaseTime !== undefined) {
      const driver = this.driver;
      try {
        skew = new ClockSkewMonitor({
          table,
          databaseTime: () => (driver.databaseTime as () => Promise<Date>).call(driver),
          clock: this.#clock ?? (() => new Date()),
          logger: this.#logger,
          options: this.#clockSkew,
        });
        await skew.assertAtSubscribe();
      } catch (error) {
        await claimer.close();
        throw error;
      }
    }
    return { claimer, skew };
  }

  /**
   * Runs schedule `name` in this broker: at every tick of `cron` (read in `options.timezone`,
   * default UTC) one row with `payload` (or `payload(tick)`) is published to `table`, its
   * `runAt` the tick, however many processes run the schedule: the driver's schedule ledger
   * (`rowclaim_schedule_ticks`, see `schemaSql` in the core README) records each tick under a
   * unique key in the row's own transaction, so exactly one process publishes it. At start, the
   * ticks missed since the ledger's last tick and within `options.backfill` ms are published,
   * each once. A schedule changed in code takes its new cron, payload and options at the next
   * start; one removed is no longer published (its ledger entries stay until pruned).
   *
   * @example
   * await broker.schedule(jobs, "nightly-report", "0 3 * * *", { kind: "report" }, {
   *   timezone: "Europe/Berlin",
   *   backfill: 6 * 60 * 60 * 1000,
   * });
   *
   * @throws {DeclarationError} the cron expression or time zone is invalid, `backfill` is
   * negative, an option is unknown or does not fit the table, or this broker already runs a
   * schedule of that name. Nothing is written.
   * @throws {UnsupportedFormError} the driver keeps no schedule ledger (`capabilities.schedules`).
   * @throws {SchemaError} the ledger table does not exist where `table` lives.
   * @throws {ClosedError} the broker is closed.
   */
  async schedule<Table extends TableDefinition>(
    table: Table,
    name: string,
    cron: string,
    payload: ScheduledPayload<Table>,
    options: ScheduleOptionsFor<Table> = {},
  ): Promise<Schedule> {
    const described = table as TableDefinition;
    this.#assertOpen(described);
    const settings = checkSchedule(described, name, cron, options);
    if (this.#schedules.has(settings.name)) {
      throw new DeclarationError(
        `schedule(${described.name}, "${settings.name}"): this broker already runs a schedule named "${settings.name}". Give each schedule its own name, or stop the first one.`,
        { table: described.name },
      );
    }
    const ledger = this.driver.scheduleLedger;
    if (!this.driver.capabilities.schedules || ledger === undefined) {
      throw new UnsupportedFormError(
        `schedule(${described.name}, "${settings.name}"): the ${this.driver.name} driver keeps no schedule ledger (capabilities.schedules is false), so it cannot publish each tick exactly once.`,
        { table: described.name },
      );
    }
    const clock = this.#clock ?? (() => new Date());
    const encode = async (tick: Date): Promise<PublishRow> => {
      const body = typeof payload === "function" ? (payload as (tick: Date) => unknown)(tick) : payload;
      const message: PublishMessage = {
        ...settings.message,
        ...(described.columns.runAt === undefined ? {} : { runAt: tick }),
        payload: body,
      } as PublishMessage;
      const [checked] =
        described.payloadSchema === undefined ? [message] : await this.#checkPayloads(described, [message]);
      return this.#encode(described, checked as PublishMessage, tick);
    };
    // Every option is checked against the table, and the payload against its schema, before
    // anything is read or written.
    try {
      await encode(settings.ticks.next(clock()) ?? clock());
    } catch (error) {
      if (!BrokerError.is(error, "INVALID_ARGUMENT")) throw error;
      throw new DeclarationError(error.message.replace(/^publish\(/, "schedule("), {
        table: described.name,
        cause: error,
      });
    }
    const runner = new ScheduleRunner({
      table: described,
      name: settings.name,
      ticks: settings.ticks,
      backfillMs: settings.backfillMs,
      ledger,
      clock,
      logger: this.#logger,
      encode,
      onPublished: () => wake(wakeKey(this.driver.dialect, described)),
      onStopped: () => {
        if (this.#schedules.get(settings.name) === runner) this.#schedules.delete(settings.name);
      },
    });
    this.#schedules.set(settings.name, runner);
    try {
      await ledger.check(described);
      await runner.start();
    } catch (error) {
      this.#schedules.delete(settings.name);
      throw error;
    }
    return runner;
  }

  /** The schedules this broker runs now. */
  get schedules(): readonly Schedule[] {
    return [...this.#schedules.values()];
  }

  /**
   * Inserts one row with a key (unique jobs, see {@link UniqueOptions}): at most one queued row
   * of the table holds the key; `mode` says what happens when one does. Returns the id of the
   * row that holds the key and what happened (`inserted`, `kept`, `replaced`).
   *
   * @throws {InvalidArgumentError} the payload or an option does not fit the table: an unknown
   * mode, a key on a table without a key column, a key that is not a non-empty string, a period
   * that is not above 0. Nothing is written.
   * @throws {ClosedError} the broker is closed.
   */
  publish<Table extends TableDefinition>(
    table: Table,
    payload: PublishPayloadOf<Table>,
    options: UniquePublishOptionsFor<Table>,
  ): Promise<PublishResult>;
  /**
   * Inserts one row and wakes the table's subscriptions in this process. Returns the row's id.
   *
   * @throws {InvalidArgumentError} the payload or an option does not fit the table.
   * @throws {ClosedError} the broker is closed.
   */
  publish<Table extends TableDefinition>(
    table: Table,
    payload: PublishPayloadOf<Table>,
    options?: PublishOptionsFor<Table>,
  ): Promise<RowId>;
  async publish<Table extends TableDefinition>(
    table: Table,
    payload: PublishPayloadOf<Table>,
    options: PublishOptionsFor<Table> & Partial<UniqueOptions> = {},
  ): Promise<RowId | PublishResult> {
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError(
        `publish(${table.name}, payload, options): options must be an object, not ${describeValue(options)}.`,
        { table: table.name },
      );
    }
    const unknown = unknownKey(options, publishOptionKeys);
    if (unknown !== undefined) {
      throw new InvalidArgumentError(
        `publish(${table.name}): unknown option \`${unknown.key}\`. ${unknown.advice}`,
        { table: table.name },
      );
    }
    const { client, ...message } = options;
    const results = await this.#publishRows(
      table,
      [{ ...message, payload } as PublishMessageFor<Table>],
      client === undefined ? {} : { client },
    );
    return results[0] as RowId | PublishResult;
  }

  /**
   * Inserts several rows, each with a key (unique jobs, per row as {@link Broker.publish} does
   * with a key), and wakes the table's subscriptions in this process. Returns each row's id and
   * what happened, in order. Every message is checked before anything is written.
   */
  publishMany<Table extends TableDefinition>(
    table: Table,
    messages: readonly UniquePublishMessageFor<Table>[],
    target?: PublishTarget,
  ): Promise<readonly PublishResult[]>;
  /**
   * Inserts several rows in one statement where the driver can, and wakes the table's
   * subscriptions in this process. Returns the ids in order. Every message is checked before
   * anything is written: one bad message writes nothing. When any message has a key, every
   * message's result is a {@link PublishResult} (a message without a key is `inserted`).
   */
  publishMany<Table extends TableDefinition>(
    table: Table,
    messages: readonly PublishMessageFor<Table>[],
    target?: PublishTarget,
  ): Promise<readonly RowId[]>;
  async publishMany<Table extends TableDefinition>(
    table: Table,
    messages: readonly PublishMessageFor<Table>[],
    target: PublishTarget = {},
  ): Promise<readonly (RowId | PublishResult)[]> {
    return await this.#publishRows(table, messages, target);
  }

  async #publishRows<Table extends TableDefinition>(
    table: Table,
    messages: readonly PublishMessageFor<Table>[],
    target: PublishTarget,
  ): Promise<readonly RowId[] | readonly PublishResult[]> {
    this.#assertOpen(table);
    if (!Array.isArray(messages)) {
      throw new InvalidArgumentError(`publishMany(${table.name}, messages): messages must be an array.`, {
        table: table.name,
      });
    }
    const unknownTarget =
      typeof target === "object" && target !== null ? unknownKey(target, publishTargetKeys) : undefined;
    if (unknownTarget !== undefined) {
      throw new InvalidArgumentError(
        `publishMany(${table.name}, messages, target): unknown option \`${unknownTarget.key}\`. ${unknownTarget.advice}`,
        { table: table.name },
      );
    }
    if (target.client !== undefined && !this.driver.capabilities.transactionalPublish) {
      throw new InvalidArgumentError(
        `Driver "${this.driver.name}" cannot publish inside a caller's transaction; leave out { client }.`,
        { table: table.name },
      );
    }
    if (messages.length === 0) return [];
    const now = new Date();
    const unique = messages.map((message) =>
      resolveUnique(table, typeof message === "object" && message !== null ? message : {}, now),
    );
    const keyed = unique.some((entry) => entry.key !== null);
    if (keyed) assertUniquePublish(this.driver, table, target);
    const checked = table.payloadSchema === undefined ? messages : await this.#checkPayloads(table, messages);
    const scope = this.#instrumentation?.startPublish(table, checked.length);
    let ids: readonly RowId[] | readonly PublishResult[];
    try {
      const extra = scope?.headers;
      const rows = checked.map((given, index) => {
        const {
          key: _key,
          mode: _mode,
          period: _period,
          ...plain
        } = given as PublishMessage & Partial<UniqueOptions>;
        const runAt = unique[index]?.runAt;
        const message = runAt === undefined ? plain : { ...plain, runAt };
        return this.#encode(
          table,
          extra === undefined || table.columns.headers === undefined
            ? message
            : { ...message, headers: { ...extra, ...(message.headers as Headers | undefined) } },
          now,
        );
      });
      ids = keyed
        ? await publishUniqueRows(this.driver, table, rows, unique, target)
        : await this.driver.publish(
            table,
            rows,
            target.client === undefined ? {} : { client: target.client },
          );
    } catch (error) {
      scope?.end(error);
      throw error;
    }
    scope?.end();
    wake(wakeKey(this.driver.dialect, table));
    return ids;
  }

  /**
   * Checks each payload with the table's Standard Schema and returns the messages with the
   * schema's output values.
   *
   * @throws {InvalidArgumentError} a payload fails the schema: the message names the path of
   * each issue; `cause.issues` holds them.
   */
  async #checkPayloads<Message extends { readonly payload: unknown }>(
    table: TableDefinition,
    messages: readonly Message[],
  ): Promise<readonly Message[]> {
    const schema = table.payloadSchema as StandardSchemaV1;
    return await Promise.all(
      messages.map(async (message, index) => {
        const result = await checkWithSchema(schema, message.payload);
        if (result.issues !== undefined) {
          const which = messages.length === 1 ? "the payload" : `the payload of message ${index}`;
          throw new InvalidArgumentError(
            `publish(${table.name}): ${which} fails the table's payloadSchema: ${describeIssues(result.issues)}.`,
            { table: table.name, cause: { issues: result.issues } },
          );
        }
        return { ...message, payload: result.value };
      }),
    );
  }

  /**
   * Pauses `table` (or one group of it, with `{ group }`) in the database: no subscription of
   * it, in any process, starts a claim once it has seen the pause (within one poll interval;
   * at once in this process and, on PostgreSQL drivers made with `notify: true, watchControls: true`, in every process). Rows in
   * work go on and settle. The pause lasts until {@link Broker.resume}, across restarts. The
   * first pause creates the control table (`rowclaim_controls`) where it is absent.
   *
   * @throws {InvalidArgumentError} an unknown option, or a group on a table without a group column; nothing is written.
   * @throws {UnsupportedControlError} the driver keeps no run-time controls.
   */
  async pause(table: TableDefinition, options: PauseOptions = {}): Promise<void> {
    this.#assertOpen(table);
    await setPause(this.driver, table, options, true);
  }

  /**
   * Resumes what {@link Broker.pause} paused (the whole table, or the group named): its
   * subscriptions claim again within one poll interval (at once where they hear it). Resuming
   * the table leaves groups paused on their own paused. Resuming what is not paused does nothing.
   *
   * @throws {InvalidArgumentError} an unknown option, or a group on a table without a group column; nothing is written.
   * @throws {UnsupportedControlError} the driver keeps no run-time controls.
   */
  async resume(table: TableDefinition, options: PauseOptions = {}): Promise<void> {
    this.#assertOpen(table);
    await setPause(this.driver, table, options, false);
  }

  /**
   * Reads `table`'s pauses and rate counters from the database (one statement): whether the
   * table is paused, which groups are, and for each rate counter its limit, what the current
   * window used and how long a claim waits for the next one. For `status` displays.
   *
   * @throws {UnsupportedControlError} the driver keeps no run-time controls.
   */
  async controlState(table: TableDefinition): Promise<ControlState> {
    this.#assertOpen(table);
    return await readControlState(this.driver, table, (this.#clock?.() ?? new Date()).getTime());
  }

  /** The claim gate of a subscription, on a driver with run-time controls (refusing `rateLimit` without). */
  #gate(table: TableDefinition, settings: SubscriptionSettings): ClaimGate | undefined {
    const store = this.driver.capabilities.controls ? this.driver.controls : undefined;
    if (store === undefined) return undefined;
    const clock = this.#clock;
    return new ClaimGate({
      store,
      tableKey: controlTableKey(table),
      group: settings.group,
      pollInterval: settings.pollInterval,
      rate: settings.rateLimit,
      ...(clock === undefined ? {} : { clock: () => clock().getTime() }),
    });
  }

  /**
   * Stops claiming, lets deliveries in work settle (up to `timeout` ms, default 30 s), gives up
   * the rest (their settlements fail with `CLOSED`; row locks roll back, advisory keys unlock,
   * leases are left to run out), releases every lock and closes the driver. Resolves once the
   * broker holds no connection. The driver's close gets what is left of `timeout` (at least
   * {@link CLOSE_GRACE_MS} ms): past it (a driver pool waiting for a connection your own code
   * holds) close returns, the driver goes on closing in the background, and a warning is logged
   * with a `CloseTimeoutError` (code `CLOSE_TIMEOUT`) in `err` naming it; close never rejects for it. A subscription still
   * retrying its start-up rejects with `CLOSED`. Calling it again returns the same promise.
   */
  close(options: { timeout?: number } = {}): Promise<void> {
    this.#closing ??= this.#close(options.timeout ?? 30_000);
    return this.#closing;
  }

  async #close(timeout: number): Promise<void> {
    this.#removeSignalListeners?.();
    this.#closeSignal.abort();
    const deadline = Date.now() + timeout;
    await Promise.allSettled([...this.#schedules.values()].map((schedule) => schedule.stop()));
    await Promise.allSettled([...this.#subscriptions].map((subscription) => subscription.stop({ timeout })));
    await Promise.allSettled([...this.#listeners].map((listener) => listener.close()));
    this.#listeners.clear();
    await Promise.allSettled([...this.#closingListeners]);
    this.#recent.clear();
    // The driver's close waits for its pool, which waits for every client checked out of it (one
    // your own code holds included): bounded by what is left of the timeout, and at least the grace.
    const limitMs = Math.max(deadline - Date.now(), CLOSE_GRACE_MS);
    markDriverClosed(this.driver);
    const closing = this.driver.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timed out">((resolve) => {
      timer = setTimeout(() => resolve("timed out"), limitMs);
    });
    const done = await Promise.race([closing.then(() => "closed" as const), timedOut]).finally(() =>
      clearTimeout(timer),
    );
    if (done === "closed") return;
    // It goes on closing in the background; a failure of it is logged, never thrown.
    closing.catch((error: unknown) => this.#logger.error("Closing the driver failed.", { err: error }));
    const pending = `closing the ${this.driver.name} driver (its pool ends only once every connection checked out of it is returned: one your own code holds, a transactional publish's client)`;
    this.#logger.warn(
      `broker.close({ timeout: ${timeout} }) returned with something still open: ${pending}. It goes on closing in the background; return the connections your code holds to let it finish.`,
      {
        err: new CloseTimeoutError(`broker.close() timed out after ${limitMs} ms while ${pending}.`, {
          pending,
          waitedMs: limitMs,
        }),
      },
    );
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
    assertDriverOpen(this.driver, table);
  }

  #assertOffered(table: TableDefinition): void {
    const { capabilities, name } = this.driver;
    if (!capabilities.forms.includes(table.form)) {
      const offered = capabilities.forms.map((form) => formAdvice[form]).join("; or ");
      throw new UnsupportedFormError(
        `Table "${table.name}" takes the ${formLabels[table.form]} form, which the ${name} driver does not offer. It offers: ${offered}.`,
        { table: table.name },
      );
    }
    if (table.fifo && !capabilities.fifo.includes(table.form)) {
      throw new UnsupportedFormError(
        `Table "${table.name}" is FIFO in the ${formLabels[table.form]} form, which the ${name} driver does not guard. FIFO is offered in: ${capabilities.fifo.map((form) => formLabels[form]).join(", ") || "no form"}.`,
        { table: table.name },
      );
    }
    if (table.advisoryLimit > 1 && !capabilities.advisoryLimit) {
      throw new UnsupportedFormError(
        `Table "${table.name}" sets advisoryLock.limit to ${table.advisoryLimit}, which the ${name} driver does not keep (it runs rows of one key one at a time only). Remove advisoryLock.limit, or use a driver that keeps per-key limits.`,
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
    if (typeof options !== "object" || options === null) {
      fail(`the options must be an object, not ${describeValue(options)}`, "Pass { workers, … } or nothing.");
    }
    const unknown = unknownKey(options, subscribeOptionKeys);
    if (unknown !== undefined) fail(`unknown option \`${unknown.key}\``, unknown.advice);
    const whole = (value: number | undefined, name: string, fallback: number): number => {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
        fail(
          `${name} must be a whole number of at least 1, got ${describeValue(value)}`,
          `Set ${name} to 1 or more.`,
        );
      return value;
    };
    const group = options.group ?? null;
    if (group !== null) {
      if (typeof group !== "string")
        fail(`group must be a string, got ${describeValue(group)}`, "Name the group to claim from.");
      if (table.columns.group === undefined)
        fail(
          `group "${group}" is given but the table has no group column`,
          "Name columns.group, or leave group out.",
        );
    }
    const pollInterval = options.pollInterval ?? 1000;
    if (typeof pollInterval !== "number" || !Number.isFinite(pollInterval) || pollInterval < 1) {
      fail(
        `pollInterval must be a number of milliseconds of at least 1, got ${describeValue(pollInterval)}`,
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
    if (typeof backoff !== "object" || backoff === null) {
      fail(`backoff must be an object, got ${describeValue(backoff)}`, "Pass { baseMs, maxMs }.");
    }
    const unknownBackoff = unknownKey(backoff, backoffOptionKeys);
    if (unknownBackoff !== undefined)
      fail(`unknown option \`backoff.${unknownBackoff.key}\``, unknownBackoff.advice);
    for (const [name, value] of Object.entries(backoff)) {
      if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
        fail(
          `backoff.${name} must be a number of milliseconds, got ${describeValue(value)}`,
          `Set backoff.${name} to 0 or more.`,
        );
      }
    }
    const workers = whole(options.workers, "workers", 1);
    const prefetch = options.prefetch === 0 ? 0 : whole(options.prefetch, "prefetch", 0);
    if (prefetch > 0 && table.form === "advisory") {
      fail(
        `prefetch ${prefetch} is set on an advisory lock table`,
        "Each row the advisory lock form holds holds a connection with its key's lock: raise workers (and the pool) instead.",
      );
    }
    // A lease or advisory claim may fill every free worker at once: its rows settle one by one.
    // A row lock batch shares one transaction, so that form claims one row at a time unless
    // it holds rows ahead; with prefetch, lease and row lock claims fill the room held ahead.
    // (A worker's slot is free once its row's settlement is sent, so the rows of a row lock
    // batch larger than the workers all start before the batch commits.)
    const most = table.form === "advisory" ? workers : workers + prefetch;
    const fallback = prefetch > 0 ? workers + prefetch : table.form === "rowLock" ? 1 : workers;
    const batch = whole(options.batch, "batch", fallback);
    if (batch > most) {
      fail(
        most === workers
          ? `batch ${batch} is larger than workers ${workers}`
          : `batch ${batch} is larger than workers ${workers} plus prefetch ${prefetch}`,
        table.form === "advisory"
          ? "A claim never takes more rows than there are workers in the advisory lock form: set workers to at least batch."
          : "A claim never takes more rows than there is room for: set workers to at least batch, or prefetch to hold rows ahead of the workers (batch at most workers + prefetch).",
      );
    }
    return {
      group,
      workers,
      batch,
      prefetch,
      pollInterval,
      maxAttempts: retirement.maxAttempts,
      deadLetter: retirement.deadLetter,
      backoff,
      extendLeases: options.extendLeases ?? true,
      rateLimit: checkRateLimit(options.rateLimit, table, group, fail),
      timeout: checkHandlerTimeout(options, fail, table),
    };
  }

  #encode(table: TableDefinition, message: PublishMessage, now: Date): PublishRow {
    const fail = (problem: string): never => {
      throw new InvalidArgumentError(`publish(${table.name}): ${problem}`, { table: table.name });
    };
    if (typeof message !== "object" || message === null)
      fail(`each message must be an object { payload, … }, not ${describeValue(message)}.`);
    const unknown = unknownKey(message, publishMessageKeys);
    if (unknown !== undefined) fail(`unknown option \`${unknown.key}\`. ${unknown.advice}`);
    const { columns } = table;
    const group = message.group ?? null;
    if (group !== null) {
      if (typeof group !== "string") fail(`group must be a string, not ${describeValue(group)}.`);
      if (columns.group === undefined) fail(`group "${group}" is given but the table has no group column.`);
    }
    let runAt: Date | null = null;
    if (message.runAt !== undefined) {
      if (!(message.runAt instanceof Date) || Number.isNaN(message.runAt.getTime()))
        fail(`runAt must be a valid Date, not ${describeValue(message.runAt)}.`);
      if (columns.runAt === undefined) fail("runAt is given but the table has no runAt column.");
      runAt = message.runAt;
    } else if (columns.runAt !== undefined) {
      runAt = now;
    }
    let priority: number | null = null;
    if (message.priority !== undefined) {
      if (typeof message.priority !== "number" || !Number.isSafeInteger(message.priority))
        fail(`priority must be a whole number, not ${describeValue(message.priority)}.`);
      if (columns.priority === undefined) fail("priority is given but the table has no priority column.");
      priority = message.priority;
    }
    if (message.headers !== undefined && columns.headers === undefined)
      fail("headers are given but the table has no headers column.");
    const values = message.values ?? {};
    if (typeof values !== "object" || values === null)
      fail(`values must be an object of extra column values, not ${describeValue(values)}.`);
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

const formAdvice: Record<ClaimFormName, string> = {
  rowLock: "row lock (name neither columns.lockedUntil nor advisoryLock)",
  lease: "lease (name a columns.lockedUntil column)",
  advisory: 'advisory lock (set advisoryLock: "…{column}…")',
};

/** Creates a {@link Broker}. */
export function createBroker<D extends Driver>(options: BrokerOptions & { readonly driver: D }): Broker<D> {
  return new Broker(options);
}
