/**
 * What one conformance test works with: tables of its own (created with the driver's
 * `schemaSql`, dropped afterwards), brokers (each on a driver of its own, closed afterwards),
 * child processes (killed afterwards), gates (opened afterwards) and capability gating.
 *
 * @module
 */
import {
  type Broker,
  type BrokerOptions,
  type ClaimFormName,
  createBroker,
  type Driver,
  defineTable,
  type Logger,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import type { DriverCapabilities } from "@rowclaim/core/driver";
import { capabilitiesOf } from "./capabilities.js";
import { ChildRunner } from "./child-process.js";
import type { ChildConfig } from "./child-protocol.js";
import type { ConformanceHarness, UserPoolDriver } from "./harness.js";
import { describeTable, formLabels, type TableShape } from "./tables.js";
import { uniqueTableName } from "./values.js";
import { Gate } from "./wait.js";

/** The running test, as a {@link Fixture} sees it: its name, and how it skips itself. */
export interface TestScope {
  /** The test's name, for log lines. */
  readonly name: string;
  /** Skips the running test with `reason` shown in the report. */
  skip(reason: string): never;
}

/** A broker on a pool the harness owns, with what the test asks of that pool. */
export interface UserPoolBroker {
  readonly broker: Broker;
  /** The harness's pool the broker runs on. */
  readonly pool: UserPoolDriver;
}

/** One entry of a {@link Fixture}'s log. */
export interface LogEntry {
  readonly level: "warn" | "error";
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;
}

/** A test's own resources, released by {@link Fixture.cleanup}. */
export class Fixture {
  /** The harness of the driver under test. */
  readonly harness: ConformanceHarness;
  /** The sub-suite's short name (it starts the test's table names). */
  readonly suite: string;
  /** The running test. */
  readonly scope: TestScope;
  /** What the brokers of this test logged (printed too when `ROWCLAIM_CONFORMANCE_LOG` is set). */
  readonly log: LogEntry[] = [];
  /** The logger every broker of this test reports through. */
  readonly logger: Logger;
  readonly #tables: TableDefinition[] = [];
  readonly #brokers: Broker[] = [];
  readonly #children: ChildRunner[] = [];
  readonly #gates: Gate[] = [];
  readonly #pools: Pick<UserPoolDriver, "end">[] = [];
  readonly #firstCleanups: (() => Promise<void>)[] = [];
  #schemaDriver: Promise<Driver> | undefined;

  constructor(harness: ConformanceHarness, suite: string, scope: TestScope) {
    this.harness = harness;
    this.suite = suite;
    this.scope = scope;
    const echo =
      process.env.ROWCLAIM_CONFORMANCE_LOG !== undefined && process.env.ROWCLAIM_CONFORMANCE_LOG !== "";
    const record =
      (level: "warn" | "error") =>
      (message: string, details?: Readonly<Record<string, unknown>>): void => {
        this.log.push({ level, message, details });
        if (echo) console[level](`[${harness.name} ${scope.name}] ${message}`, details ?? "");
      };
    this.logger = { warn: record("warn"), error: record("error") };
  }

  /** The driver's declared capabilities. */
  capabilities(): Promise<DriverCapabilities> {
    return capabilitiesOf(this.harness);
  }

  /** Skips the running test, with `reason` shown in the report. */
  skip(reason: string): never {
    return this.scope.skip(reason);
  }

  /** Skips the test unless the driver offers `form`. */
  async requireForm(form: ClaimFormName): Promise<DriverCapabilities> {
    const caps = await this.capabilities();
    if (!caps.forms.includes(form))
      this.skip(`the ${this.harness.name} driver does not offer the ${formLabels[form]} form`);
    return caps;
  }

  /** The harness's `refuseProcessedAt`; skips the test where the harness gives none. */
  requireRefuseProcessedAt(): NonNullable<ConformanceHarness["refuseProcessedAt"]> {
    const refuse = this.harness.refuseProcessedAt?.bind(this.harness);
    if (refuse === undefined) {
      this.skip(
        `the ${this.harness.name} harness gives no refuseProcessedAt(), so no test can make the database refuse an ack`,
      );
    }
    return refuse;
  }

  /** Skips the test unless the driver keeps FIFO groups in order in `form`. */
  async requireFifo(form: ClaimFormName): Promise<DriverCapabilities> {
    const caps = await this.requireForm(form);
    if (!caps.fifo.includes(form))
      this.skip(`the ${this.harness.name} driver does not keep FIFO groups in the ${formLabels[form]} form`);
    return caps;
  }

  /** A table name of this test's own (`<prefix><suite>_<random>`, prefix `rc_` unless the harness names one). */
  uniqueName(): string {
    return uniqueTableName(this.suite, Math.random, this.harness.tablePrefix);
  }

  /**
   * Defines a table named for this test in `form` with `shape`, creates it with the driver's
   * `schemaSql`, and drops it after the test.
   */
  async table(form: ClaimFormName, shape: TableShape = {}): Promise<TableDefinition> {
    return this.createTable(defineTable(describeTable(form, this.uniqueName(), shape)));
  }

  /** Defines `description` and creates it (dropped after the test). */
  async tableFrom(description: TableDescription): Promise<TableDefinition> {
    return this.createTable(defineTable(description));
  }

  /** Creates `table` with the driver's `schemaSql` on the harness's connection; dropped after the test. */
  async createTable(table: TableDefinition): Promise<TableDefinition> {
    this.#tables.push(table);
    const driver = await this.#schema();
    await this.harness.execute(driver.schemaSql(table));
    return table;
  }

  /** Drops `table` after the test even though the test did not create it through the fixture. */
  dropLater(table: TableDefinition): void {
    this.#tables.push(table);
  }

  /**
   * A broker on a new driver of its own (closed after the test): on a pool the driver makes, or,
   * where the harness says `pools: "user"`, on a new pool of the harness's own.
   */
  async broker(): Promise<Broker> {
    if (this.harness.pools === "user") return (await this.userPoolBroker()).broker;
    const driver = await this.harness.createDriver();
    const broker = createBroker({ driver, logger: this.logger });
    this.#brokers.push(broker);
    return broker;
  }

  /** A broker on `driver`, a driver the test made itself (closed after the test), with `options` beside it. */
  brokerOn(driver: Driver, options: Omit<BrokerOptions, "driver" | "logger"> = {}): Broker {
    const broker = createBroker({ ...options, driver, logger: this.logger });
    this.#brokers.push(broker);
    return broker;
  }

  /** Skips the test unless the harness makes drivers on pools of its own (`createUserPoolDriver`). */
  requireUserPools(): NonNullable<ConformanceHarness["createUserPoolDriver"]> {
    const create = this.harness.createUserPoolDriver?.bind(this.harness);
    if (create === undefined) {
      return this.skip(
        `the ${this.harness.name} harness gives no createUserPoolDriver(), so no test can run a driver on a pool the user owns`,
      );
    }
    return create;
  }

  /**
   * A broker on a driver made on a new pool the harness owns (skipping the test when the harness
   * makes none). The broker is closed after the test, and the pool ended after that.
   */
  async userPoolBroker(): Promise<UserPoolBroker> {
    const create = this.requireUserPools();
    const pool = await create();
    this.#pools.push(pool);
    const broker = createBroker({ driver: pool.driver, logger: this.logger });
    this.#brokers.push(broker);
    return { broker, pool };
  }

  /** Ends `pool` (a pool of the harness's own) after the test, once every broker closed. */
  endLater(pool: Pick<UserPoolDriver, "end">): void {
    this.#pools.push(pool);
  }

  /** Runs `release` first when the test ends (before brokers close), however it ends: a lock the test holds. */
  releaseFirst(release: () => Promise<void>): void {
    this.#firstCleanups.push(release);
  }

  /** The rows of `table` as a second connection sees them, ordered by id. */
  rows(table: TableDefinition): Promise<Record<string, unknown>[]> {
    return this.harness.readRows(table);
  }

  /** A gate opened at the latest when the test ends, so no handler outlives its test. */
  gate(): Gate {
    const gate = new Gate();
    this.#gates.push(gate);
    return gate;
  }

  /** Skips the test unless the harness gives a `childDriverModule` (call it before making tables). */
  requireChildren(): string {
    const driverModule = this.harness.childDriverModule;
    if (driverModule === undefined) {
      return this.skip(
        `the ${this.harness.name} harness gives no childDriverModule, so no child process can make the driver`,
      );
    }
    return driverModule;
  }

  /** Starts a child runner with the harness's `childDriverModule` (skipping the test when there is none). */
  child(config: Omit<ChildConfig, "driverModule">): ChildRunner {
    const driverModule = this.requireChildren();
    const child = new ChildRunner({ ...config, driverModule });
    this.#children.push(child);
    return child;
  }

  /** Opens every gate, kills every child, closes every broker and drops every table of the test. */
  async cleanup(): Promise<void> {
    await Promise.allSettled(this.#firstCleanups.map((release) => release()));
    for (const gate of this.#gates) gate.open();
    for (const child of this.#children) child.kill("SIGKILL");
    await Promise.allSettled(this.#children.map((child) => child.exited));
    await Promise.allSettled(this.#brokers.map((broker) => broker.close({ timeout: 2000 })));
    await Promise.allSettled(this.#pools.map((pool) => pool.end()));
    if (this.#schemaDriver !== undefined) {
      await this.#schemaDriver.then((driver) => driver.close()).catch(() => undefined);
    }
    const failures: unknown[] = [];
    for (const table of this.#tables.reverse()) {
      try {
        await this.harness.dropTable(table);
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, `Dropping the test's tables failed.`);
  }

  #schema(): Promise<Driver> {
    this.#schemaDriver ??= Promise.resolve(this.harness.createDriver());
    return this.#schemaDriver;
  }
}
