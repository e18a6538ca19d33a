/**
 * The operations capability of a driver: the few statements the operations of
 * `operations.ts` (cancel, remove, retry now, redrive, prune, and the reads a dashboard makes)
 * are built from. A driver offers it as one object, {@link Driver.operations}; core checks every
 * argument, splits work into bounded batches, reports progress and composes the results, so a
 * driver only translates each request below into its database's SQL.
 *
 * @module
 */
import type { ClaimedRow, RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/**
 * The state of a row, as operations and the dashboard see it:
 *
 * - `due`: unfinished, not dead, due now (`runAt` NULL or past), not in work;
 * - `delayed`: unfinished, not dead, due later, not in work;
 * - `inWork`: claimed now (row lock: locked; lease: an unexpired `lockedUntil`; advisory: its
 *   rendered key is held — by this row's claim or, the database cannot tell which, another row
 *   of the same key);
 * - `dead`: dead-lettered (in the dead-letter group, or a row of the dead-letter table);
 * - `processed`: `processedAt` is set.
 */
export type RowState = "due" | "delayed" | "inWork" | "dead" | "processed";

/** Every {@link RowState}, in the order a dashboard shows them. */
export const rowStates: readonly RowState[] = Object.freeze([
  "due",
  "delayed",
  "inWork",
  "dead",
  "processed",
]);

/** Which rows an action names: by primary key, or by the value of the table's `key` column. */
export type RowSelection = { readonly ids: readonly RowId[] } | { readonly keys: readonly string[] };

/**
 * A filter over rows, every field optional and all of them together (AND). Unknown fields are
 * refused with `INVALID_ARGUMENT`.
 */
export interface RowFilter {
  /** Only these primary keys. */
  readonly ids?: readonly RowId[];
  /** Only rows whose `key` column holds one of these (needs a `key` column). */
  readonly keys?: readonly string[];
  /** Only rows whose payload, as text, contains this string (case-sensitive, literal). */
  readonly text?: string;
  /** Only rows of this group (`null`: rows whose group is NULL). Needs a `group` column. */
  readonly group?: string | null;
}

/** What holds a row in work, where the database can tell. */
export type RowHolder =
  | {
      /** A lease: the row is claimed until `until`. */
      readonly kind: "lease";
      readonly until: Date;
    }
  | {
      /** A row lock held by another session; `session` names it where the database tells (PostgreSQL backend pid, MySQL thread id). */
      readonly kind: "rowLock";
      readonly session: string | null;
    }
  | {
      /** An advisory key held by a session; `session` as for a row lock. */
      readonly kind: "advisoryKey";
      readonly key: string;
      readonly session: string | null;
    };

/** A row as the driver read it for an operation: decoded like a claimed row, plus whether it is in work. */
export interface StoredRow extends ClaimedRow {
  /** Whether the row is in work now (see {@link RowState}). */
  readonly inWork: boolean;
  /** What holds it, when it is in work and the driver can tell. */
  readonly holder?: RowHolder;
}

/**
 * Which rows of a selection an action may change. `queued`: unfinished, not dead rows (cancel,
 * retry now); `any`: rows in every state (remove). Rows in work are never changed in either.
 */
export type ActionScope = "queued" | "any";

/** One bounded batch of a row action, as core hands it to the driver. */
export interface DriverRowAction {
  /** What to do to the rows: delete them, or make them due at `now` (`runAt = now`). */
  readonly kind: "delete" | "makeDue";
  /** The rows: at most {@link DriverRowAction.limit} ids or keys. */
  readonly selection: RowSelection;
  /** Which states the action may touch. */
  readonly scope: ActionScope;
  /** The dead-letter group the table's queued rows exclude, if the table has one. */
  readonly deadGroup: string | null;
  /** The time to compare `runAt` and `lockedUntil` with, and to write for `makeDue`. */
  readonly now: Date;
}

/** What a driver did with a {@link DriverRowAction}. */
export interface DriverRowActionResult {
  /** The ids of the rows changed (deleted or made due). */
  readonly changed: readonly RowId[];
  /**
   * The ids of the rows of the selection, in the scope, that were left untouched because they
   * are in work (row lock: locked, seen without waiting; lease: an unexpired lease; advisory:
   * the rendered key is held, tried without waiting).
   */
  readonly inWork: readonly RowId[];
  /** For a selection by keys: the keys that matched a row (changed or in work). */
  readonly keys?: readonly string[];
}

/** One bounded batch of a redrive: dead rows back into the queue. */
export interface DriverRedriveBatch {
  /** Where the dead rows are: the table's dead-letter group, or its dead-letter table. */
  readonly from: { readonly group: string } | { readonly table: string };
  /** Only dead rows with these ids (ids of the dead-letter table for a table dead letter); all when absent. */
  readonly ids?: readonly RowId[];
  /** Only dead rows whose payload text contains this. */
  readonly text?: string;
  /** The group the rows go back to (`null`: the NULL group; ignored on a table without groups). */
  readonly group: string | null;
  /** At most this many rows, the first in id order. */
  readonly limit: number;
  /** The new `runAt` of every row moved (due at once). */
  readonly now: Date;
}

/** One bounded batch of a prune: processed rows finished before `before`. */
export interface DriverPruneBatch {
  /** Delete rows whose `processedAt` is before this. */
  readonly before: Date;
  /** At most this many rows, the oldest first. */
  readonly limit: number;
}

/** A lock that lets one process at a time prune a table. */
export interface PruneLock {
  /** Lets the lock go. */
  release(): Promise<void>;
}

/** One page of a row listing, as core asks the driver for it. */
export interface DriverRowQuery {
  /** Only rows in this state; every state when absent. */
  readonly state?: RowState;
  /** The filter, already checked. */
  readonly filter: RowFilter;
  /** The dead-letter group, when the table has one (rows in it are `dead`). */
  readonly deadGroup: string | null;
  /** Keyset cursor: only rows whose id is greater than this (in id order). */
  readonly after?: RowId;
  /** At most this many rows. */
  readonly limit: number;
  /** The time that separates `due` from `delayed`, and expired leases from live ones. */
  readonly now: Date;
}

/** A capped count of rows, as core asks the driver for it. */
export interface DriverRowCount {
  /** Only rows in this state; every state when absent. */
  readonly state?: RowState;
  /** The filter, already checked. */
  readonly filter: RowFilter;
  /** The dead-letter group, if any. */
  readonly deadGroup: string | null;
  /** Count at most this many rows (a page stays fast on millions of rows). */
  readonly cap: number;
  /** As for {@link DriverRowQuery.now}. */
  readonly now: Date;
}

/**
 * What a driver can tell about its rows, beyond what every operations driver does. Core and the
 * dashboard read these flags; a driver states what its database can do.
 */
export interface OperationsFeatures {
  /** Whether {@link StoredRow.holder} names the session holding a row lock or key (else only the lease's expiry). */
  readonly holderSessions: boolean;
  /** How the prune lock is taken, for people: for example `"pg_try_advisory_lock"`, `"GET_LOCK"`, `"BEGIN IMMEDIATE"`. */
  readonly pruneLock: string;
}

/**
 * The operations capability: one object a driver offers as {@link Driver.operations}. Every
 * method works on the table given (a dead-letter table is given as its own definition, built by
 * core with the same columns), runs without waiting on a row or key that is held, and changes at
 * most the batch it is asked for, so that no statement runs long.
 */
export interface OperationsDriver {
  /** What the driver can tell; see {@link OperationsFeatures}. */
  readonly features: OperationsFeatures;
  /** Deletes, or makes due, the rows of one batch that are in the scope and not in work. */
  act(table: TableDefinition, action: DriverRowAction): Promise<DriverRowActionResult>;
  /**
   * Moves one batch of dead rows back into the queue, in id order, with the attempt reset to 1,
   * `runAt` set to `now`, unlocked; a table dead letter inserts them into `table` and deletes them
   * from the dead-letter table in one transaction. Returns how many rows moved.
   */
  redrive(table: TableDefinition, batch: DriverRedriveBatch): Promise<number>;
  /** Deletes one batch of processed rows. Returns how many rows it deleted. */
  prune(table: TableDefinition, batch: DriverPruneBatch): Promise<number>;
  /**
   * Takes the table's prune lock without waiting; `null` when another process holds it.
   * (PostgreSQL: a session advisory lock; MySQL/MariaDB: `GET_LOCK`; SQLite: a lock row.)
   */
  lockPrune(table: TableDefinition): Promise<PruneLock | null>;
  /** One page of rows, in id order. */
  list(table: TableDefinition, query: DriverRowQuery): Promise<readonly StoredRow[]>;
  /** How many rows match, counting at most `cap`. */
  count(table: TableDefinition, query: DriverRowCount): Promise<number>;
  /**
   * One row by id with what holds it, or `undefined` when there is none. Optional: a driver whose
   * listing tells all it knows of a row leaves it out, and core reads the row with
   * {@link OperationsDriver.list} (the id as the filter, every state, no dead-letter group, one row).
   */
  detail?(table: TableDefinition, id: RowId, now: Date): Promise<StoredRow | undefined>;
}
