/**
 * The advisory lock form on SQLite, with keys kept in the process per database file (see
 * `keys.ts`). A claim, in one transaction of the table's mode (a claim of one row in the
 * default IMMEDIATE mode: its statements alone, the take being the one write), selects for each
 * rendered key not held in the process its first claimable row (keys rendered in SQL: literals
 * as parameters, columns cast to text, NULL as the empty string), takes each row while it is
 * still claimable (`attempt = attempt + 1`, read back), and holds the keys of the rows it took
 * (all in one synchronous call: no other code of the process runs between a take and its key).
 * A settlement runs by id and then drops the key; a release drops the key. An ack may travel
 * with the next claim (`claimWithAcks`): one transaction for both, the acked keys free inside it.
 *
 * Settling and unlocking are one step: the settlement statement commits on its own (autocommit)
 * inside one synchronous call, and the key is dropped right after it returns, before any other
 * code of the process runs. The key lives in this process only (no other process may run
 * advisory subscriptions on the file, see below), so no claim can see the key free before the
 * settlement is committed, and a claim that runs after finds the row settled (deleted or marked
 * processed): there is no unlock round trip to merge and no window to close.
 *
 * Keys are kept in the process, so one process at a time may run advisory lock subscriptions
 * on a database file: the first takes ownership of the file's advisory form (`advisory-owner.ts`,
 * an operating-system file lock dropped when the process ends), and a second process is refused
 * at subscribe with `UnsupportedFormError`, naming the lease form. A settlement that finds its
 * row gone or finished changes nothing and fails with `LeaseLostError`.
 *
 * With a per-key limit n above 1 (`advisoryLock: { key, limit }`), a claim takes up to n rows of a
 * key, each under a slot key (`key#1` … `key#n`) free in the process and with its own row key
 * (`key#row:<id>`) free too; the token holds both, dropped together.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import {
  type Acks,
  ADVISORY_SLOT_SEPARATOR,
  type AdvisoryClaimer,
  advisoryRowGone,
  advisoryRowKey,
  type Claimed,
  type ClaimedRow,
  type ClaimedWithAcks,
  type ClaimRequest,
  firstRowsPerKey,
  freeAdvisorySlots,
  type HeldKeyRow,
  KeyCounts,
  type Settlement,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { type AdvisoryOwnership, ownAdvisoryForm } from "./advisory-owner.js";
import { retryBusy } from "./busy-retry.js";
import { claimedRowOf, toEpochMs } from "./claimed-row.js";
import type { SqliteStatement } from "./database.js";
import { HeldKey, heldKeys } from "./keys.js";
import type { ClaimerContext } from "./lease.js";
import { normalizeError } from "./normalize-error.js";
import { checkSchema } from "./schema-check.js";
import { SettlementStatements } from "./settle.js";
import {
  advisoryCandidatesSql,
  advisoryKeySql,
  advisoryTakeSql,
  type QuotedColumns,
  quoteColumns,
} from "./sql.js";
import { inTransaction } from "./transaction.js";
import { sqliteTransaction } from "./transactional.js";

/** How many candidates a claim reads per row it may take, so that a vanished row can be passed over. */
const CANDIDATES_PER_ROW = 2;

/**
 * How many claimable rows with free keys a claim looks at when the first look (`limit` ×
 * {@link CANDIDATES_PER_ROW} rows) found too few distinct keys, at least: rows sharing a key count once.
 */
const CANDIDATE_WINDOW = 64;

/** A row a claim took, and its key (not held yet): with a limit above 1, its slot's key and its own. */
interface TakenRow {
  readonly row: Record<string, unknown>;
  readonly key: string;
  readonly rowKey?: string;
}

/**
 * The rendered keys whose every slot (`key#1` … `key#n`) is in `keys`: what a claim of a table
 * with a limit n above 1 passes over before it cuts its window.
 */
function fullKeys(keys: ReadonlySet<string>, limit: number): string[] {
  const counts = new KeyCounts();
  for (const held of keys) {
    const at = held.lastIndexOf(ADVISORY_SLOT_SEPARATOR);
    if (at === -1) continue;
    const slot = held.slice(at + 1);
    if (!/^[1-9][0-9]*$/.test(slot) || Number(slot) > limit) continue;
    counts.add(held.slice(0, at));
  }
  return counts.keysHeld(limit);
}

/** A candidate's rendered key as text (NULL as the empty string). */
function candidateKey(row: { readonly rkey: unknown }): string {
  return String(row.rkey ?? "");
}

/** No key freed by the claim itself. */
const noKeys: ReadonlySet<string> = new Set();

/** The advisory lock form's claimer for one subscription. */
export class SqliteAdvisoryClaimer implements AdvisoryClaimer<HeldKey> {
  readonly form = "advisory";
  readonly #table: TableDefinition;
  readonly #context: ClaimerContext;
  readonly #literals: Readonly<Record<string, string>>;
  readonly #candidatesSql: string;
  readonly #candidatesByWindow = new Map<number, SqliteStatement>();
  readonly #columns: QuotedColumns;
  readonly #keySql: string;
  readonly #take: SqliteStatement;
  readonly #takeCounts: boolean;
  readonly #settlements: SettlementStatements;
  readonly #ownership: AdvisoryOwnership;

  /**
   * Checks the table (every described column, the dead-letter table) and prepares every
   * statement.
   *
   * @throws {SchemaError} a table or column is missing.
   * @throws {ServerTooOldError} SQLite is older than 3.35.
   * @throws {UnsupportedFormError} another process runs advisory lock subscriptions on the file.
   */
  constructor(table: TableDefinition, context: ClaimerContext) {
    const columns = quoteColumns(table);
    const key = advisoryKeySql(table);
    this.#table = table;
    this.#context = context;
    this.#literals = key.literals;
    this.#columns = columns;
    this.#keySql = key.sql;
    this.#candidatesSql = advisoryCandidatesSql(columns, key.sql);
    const takeSql = advisoryTakeSql(columns);
    this.#takeCounts = columns.attempt !== undefined;
    checkSchema(context.db, table, { name: table.name, role: "table" }, table.allColumns, [
      { name: "the advisory candidate select (rows with their keys)", sql: this.#candidatesSql },
      { name: "the advisory take", sql: takeSql },
      ...SettlementStatements.named(columns, false),
    ]);
    try {
      this.#take = context.db.prepare(takeSql);
      this.#settlements = new SettlementStatements(context.db, table, columns, false);
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: "preparing the advisory statements",
        statement: this.#candidatesSql,
      });
    }
    this.#ownership = ownAdvisoryForm(context.db, table);
  }

  async claim(request: ClaimRequest): Promise<readonly Claimed<HeldKey>[]> {
    const { db, group, mode, busy } = this.#context;
    const limit = Math.max(1, Math.floor(request.limit));
    const now = toEpochMs(request.now);
    const keys = heldKeys(db);
    try {
      return await retryBusy(db, busy, () =>
        // One row in the default (IMMEDIATE) mode: no BEGIN and COMMIT around the claim. The
        // take is one UPDATE, which takes the write lock as it starts (the IMMEDIATE
        // transaction the mode asks for) and checks the row is still claimable, so the
        // candidate read before it needs no transaction; a take that finds its row gone
        // changes nothing. Several rows share one transaction: one commit for the batch. The
        // keys are held in the same synchronous call (see `#hold`).
        this.#hold(
          keys,
          mode === "immediate" && limit === 1
            ? this.#takeRows(keys, noKeys, group, now, limit)
            : inTransaction(db, mode, () => this.#takeRows(keys, noKeys, group, now, limit)),
        ),
      );
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: "the advisory claim",
        statement: this.#candidatesSql,
      });
    }
  }

  /**
   * An ack sent with the next claim: the acks' settlements (each only while its row is still
   * unfinished), then the claim, in one transaction (IMMEDIATE, or the table's EXCLUSIVE mode)
   * and one commit: under `synchronous = FULL`, one disk sync instead of two. The acks' keys
   * count as free for the claim (their rows are settled in the same transaction, so a key's
   * next row may be taken at once), and are dropped once it committed, before the claimed rows'
   * keys are held: all in one synchronous call, so no other code of the process sees a key
   * between the two. On any failure the transaction rolls back and every ack's key stays held.
   */
  async claimWithAcks(
    { rows: acks, settlement }: Acks<HeldKeyRow<HeldKey>>,
    request: ClaimRequest,
  ): Promise<ClaimedWithAcks<HeldKey>> {
    const { db, group, mode, busy } = this.#context;
    const limit = Math.max(1, Math.floor(request.limit));
    const now = toEpochMs(request.now);
    const keys = heldKeys(db);
    const freed = new Set(
      acks.flatMap(({ token }) => (token.rowKey === undefined ? [token.key] : [token.key, token.rowKey])),
    );
    const held = acks.map(({ row }) => ({ id: row.id, token: undefined }));
    try {
      return await retryBusy(db, busy, () => {
        const result = inTransaction(db, mode === "exclusive" ? "exclusive" : "immediate", () => ({
          settled: this.#settlements.ackEachWithin(held, settlement),
          taken: this.#takeRows(keys, freed, group, now, limit),
        }));
        // Committed: the acked keys go and the taken rows' keys are held, before anything else runs.
        for (const { token } of acks) token.drop();
        return { settled: result.settled, claimed: this.#hold(keys, result.taken) };
      });
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: `the ${settlement.kind} settlement of ${acks.length} row(s) with the next advisory claim`,
        statement: this.#candidatesSql,
      });
    }
  }

  /**
   * Holds the key of each taken row. Called in the synchronous call that took the rows, right
   * after their transaction ended: a take counts the attempt but leaves the row claimable, so
   * only its key, held before any other code of the process runs (another claim of this
   * subscription, or of another broker on the same file), keeps the row from being taken twice.
   */
  #hold(keys: Set<string>, taken: readonly TakenRow[]): Claimed<HeldKey>[] {
    return taken.map(({ row, key, rowKey }) => ({
      row: claimedRowOf(this.#table, row, this.#takeCounts),
      token: new HeldKey(keys, key, rowKey),
    }));
  }

  /**
   * Takes up to `limit` rows, each the first claimable row of a key free in the process (not in
   * `keys`, unless in `freed`) and not taken before in this call. Holds no key: the caller holds
   * them with `#hold` once its transaction committed, in the same synchronous call.
   */
  #takeRows(
    keys: ReadonlySet<string>,
    freed: ReadonlySet<string>,
    group: string | null,
    now: number,
    limit: number,
  ): TakenRow[] {
    const busyKeys = freed.size === 0 ? keys : new Set([...keys].filter((key) => !freed.has(key)));
    const taking = new Set<string>();
    const taken: TakenRow[] = [];
    const perKey = this.#table.advisoryLimit;
    if (perKey > 1) {
      // A limit above 1: each row under a free slot of its key, and its own key free too.
      const busy = (key: string): boolean => busyKeys.has(key) || taking.has(key);
      for (const candidate of this.#candidateRows(busyKeys, group, now, limit)) {
        if (taken.length >= limit) break;
        const key = String(candidate.rkey ?? "");
        const rowKey = advisoryRowKey(key, String(candidate.rid));
        const slot = freeAdvisorySlots(key, perKey, busy)[0];
        if (slot === undefined || busy(rowKey)) continue;
        const row = this.#take.get({ id: candidate.rid, group, now }) as Record<string, unknown> | undefined;
        if (row === undefined) continue;
        taking.add(slot);
        taking.add(rowKey);
        taken.push({ row, key: slot, rowKey });
      }
      return taken;
    }
    for (const candidate of this.#candidateRows(busyKeys, group, now, limit)) {
      if (taken.length >= limit) break;
      const key = String(candidate.rkey ?? "");
      if (busyKeys.has(key) || taking.has(key)) continue;
      const row = this.#take.get({ id: candidate.rid, group, now }) as Record<string, unknown> | undefined;
      if (row === undefined) continue;
      taking.add(key);
      taken.push({ row, key });
    }
    return taken;
  }

  /**
   * Up to `limit` × {@link CANDIDATES_PER_ROW} candidates, the first row of each free key in
   * claim order: first from a window of that many rows; when that window was full and held
   * fewer than `limit` keys, from a wider one ({@link CANDIDATE_WINDOW}, or 8 × as many).
   */
  #candidateRows(
    keys: ReadonlySet<string>,
    group: string | null,
    now: number,
    limit: number,
  ): { rid: unknown; rkey: string }[] {
    const wanted = limit * CANDIDATES_PER_ROW;
    const perKey = this.#table.advisoryLimit;
    const held = perKey === 1 ? [...keys] : fullKeys(keys, perKey);
    const values = { ...this.#literals, group, now, held: JSON.stringify(held) };
    // The first row of each key (a limit n above 1: its first n rows, one per slot).
    const firstPerKey = (window: number): { rows: number; picked: { rid: unknown; rkey: string }[] } => {
      const rows = this.#candidatesFor(window).all(values) as { rid: unknown; rkey: unknown }[];
      const picked = firstRowsPerKey(rows, perKey, wanted, candidateKey, (row, rkey) => ({
        rid: row.rid,
        rkey,
      }));
      return { rows: rows.length, picked };
    };
    const first = firstPerKey(wanted);
    if (first.picked.length >= limit || first.rows < wanted) return first.picked;
    return firstPerKey(Math.max(CANDIDATE_WINDOW, wanted * 8)).picked;
  }

  /** The candidates statement for a window of `window` rows (its window written in; prepared once per size). */
  #candidatesFor(window: number): SqliteStatement {
    let statement = this.#candidatesByWindow.get(window);
    if (statement === undefined) {
      statement = this.#context.db.prepare(advisoryCandidatesSql(this.#columns, this.#keySql, window));
      this.#candidatesByWindow.set(window, statement);
    }
    return statement;
  }

  /**
   * Settles and unlocks in one step: runs the settlement (its own autocommit transaction; busy
   * contention retried while the key stays held), then drops the key. The key is dropped only
   * after the settlement committed (or failed), synchronously after it returns, so a claim of
   * this process (the only one on the file that uses keys) never finds the key free while the
   * row still looks unsettled.
   *
   * @throws {LeaseLostError} the row was gone or finished; nothing changed (the key is dropped).
   */
  async settle(token: HeldKey, row: ClaimedRow, settlement: Settlement): Promise<void> {
    const { db, busy } = this.#context;
    let changed: number;
    try {
      changed = await retryBusy(db, busy, () => this.#settlements.apply(row.id, undefined, settlement));
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: `the ${settlement.kind} settlement of row ${String(row.id)}`,
      });
    } finally {
      token.drop();
    }
    if (changed === 0) throw advisoryRowGone(this.#table.name, row.id, token.key, settlement.kind);
  }

  /**
   * Transactional handlers: the synchronous body and the settlement in one IMMEDIATE
   * transaction, the key held until it ends (`src/transactional.ts`). A body that fails keeps the
   * key (the delivery settles later); anything else drops it.
   */
  async transaction(token: HeldKey, row: ClaimedRow, work: TransactionWork): Promise<void> {
    const { db, busy } = this.#context;
    let keep = false;
    try {
      await sqliteTransaction({
        db,
        busy,
        table: this.#table,
        id: row.id,
        token: undefined,
        settlements: this.#settlements,
        work,
        onBodyFailure: () => {
          keep = true;
        },
      });
    } finally {
      if (!keep) token.drop();
    }
  }

  async release(token: HeldKey): Promise<void> {
    token.drop();
  }

  async close(): Promise<void> {
    this.#ownership.release();
  }
}
