/**
 * The advisory lock form on SQLite, with keys kept in the process per database file (`keys.ts`)
 * and the file's advisory form owned by one process (`advisory-owner.ts`). A claim, in one
 * transaction of the table's mode, reads for each key not held in the process its first
 * claimable rows, takes each row while it is still claimable, and holds the keys of the rows it
 * took, all in one synchronous call: no other code of the process runs between a take and its
 * key. A settlement commits on its own and then drops the key in the same synchronous call, so
 * no claim sees the key free before the settlement committed: there is no unlock to merge. With
 * a per-key limit n above 1, a row is held under a free slot key and its own row key together.
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
  decodeClaimedRow,
  firstRowsPerKey,
  freeAdvisorySlots,
  type HeldKeyRow,
  KeyCounts,
  type RawClaimedRow,
  type Settlement,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { type AdvisoryOwnership, ownAdvisoryForm } from "./advisory-owner.js";
import { retryBusyAs } from "./busy-retry.js";
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

/** The least number of rows a claim's second look reads, when the first (`limit` × {@link CANDIDATES_PER_ROW} rows) found too few keys. */
const CANDIDATE_WINDOW = 64;

/** A row a claim took, and its key (not held yet): with a limit above 1, its slot's key and its own. */
interface TakenRow {
  readonly row: RawClaimedRow;
  readonly key: string;
  readonly rowKey: string | undefined;
}

/** The rendered keys whose every slot (`key#1` … `key#n`) is in `keys`: passed over by a claim with a limit n above 1. */
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
  readonly #candidatesSql: string;
  readonly #candidatesByWindow = new Map<number, SqliteStatement>();
  readonly #columns: QuotedColumns;
  readonly #key: ReturnType<typeof advisoryKeySql>;
  readonly #take: SqliteStatement;
  readonly #takeCounts: boolean;
  readonly #settlements: SettlementStatements;
  readonly #ownership: AdvisoryOwnership;

  /**
   * Checks the table (and its dead-letter table) and prepares every statement.
   *
   * @throws {SchemaError} a table or column is missing.
   * @throws {ServerTooOldError} SQLite is older than 3.35.
   * @throws {UnsupportedFormError} another process runs advisory lock subscriptions on the file.
   */
  constructor(table: TableDefinition, context: ClaimerContext) {
    const columns = quoteColumns(table);
    this.#table = table;
    this.#context = context;
    this.#columns = columns;
    this.#key = advisoryKeySql(table);
    this.#candidatesSql = advisoryCandidatesSql(columns, this.#key.sql);
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
    const { db, mode, busy } = this.#context;
    const limit = Math.max(1, Math.floor(request.limit));
    const keys = heldKeys(db);
    const context = {
      table: this.#table.name,
      operation: "the advisory claim",
      statement: this.#candidatesSql,
    };
    // One row in IMMEDIATE mode needs no BEGIN: the take is the one write, and it checks the row
    // is still claimable. Several rows share one transaction and one commit.
    return retryBusyAs(db, busy, context, () =>
      this.#hold(
        keys,
        mode === "immediate" && limit === 1
          ? this.#takeRows(keys, noKeys, limit, request.now)
          : inTransaction(db, mode, () => this.#takeRows(keys, noKeys, limit, request.now)),
      ),
    );
  }

  /**
   * An ack sent with the next claim, in one transaction (IMMEDIATE, or the table's EXCLUSIVE
   * mode) and one commit. The acks' keys count as free for the claim, and are dropped once it
   * committed, before the claimed rows' keys are held, in one synchronous call. On any failure
   * the transaction rolls back and every ack's key stays held.
   */
  async claimWithAcks(
    { rows: acks, settlement }: Acks<HeldKeyRow<HeldKey>>,
    request: ClaimRequest,
  ): Promise<ClaimedWithAcks<HeldKey>> {
    const { db, mode, busy } = this.#context;
    const limit = Math.max(1, Math.floor(request.limit));
    const keys = heldKeys(db);
    const freed = new Set(
      acks.flatMap(({ token }) => (token.rowKey === undefined ? [token.key] : [token.key, token.rowKey])),
    );
    const held = acks.map(({ row }) => ({ id: row.id, token: undefined }));
    const context = {
      table: this.#table.name,
      operation: `the ${settlement.kind} settlement of ${acks.length} row(s) with the next advisory claim`,
      statement: this.#candidatesSql,
    };
    return retryBusyAs(db, busy, context, () => {
      const result = inTransaction(db, mode === "exclusive" ? "exclusive" : "immediate", () => ({
        settled: this.#settlements.ackEachWithin(held, settlement),
        taken: this.#takeRows(keys, freed, limit, request.now),
      }));
      for (const { token } of acks) token.drop();
      return { settled: result.settled, claimed: this.#hold(keys, result.taken) };
    });
  }

  /**
   * Holds the key of each taken row, in the synchronous call that took the rows: a take leaves
   * the row claimable, so only its key keeps it from being taken twice.
   */
  #hold(keys: Set<string>, taken: readonly TakenRow[]): Claimed<HeldKey>[] {
    return taken.map(({ row, key, rowKey }) => ({
      row: decodeClaimedRow(this.#table, row, this.#takeCounts),
      token: new HeldKey(keys, key, rowKey),
    }));
  }

  /**
   * Takes up to `limit` rows, each the first claimable row of a key free in the process (not in
   * `keys`, unless in `freed`) and not taken before in this call; with a limit above 1, under a
   * free slot of its key and with its own row key free. Holds no key (see `#hold`).
   */
  #takeRows(keys: ReadonlySet<string>, freed: ReadonlySet<string>, limit: number, at: Date): TakenRow[] {
    const { group } = this.#context;
    const now = at.getTime();
    const busyKeys = freed.size === 0 ? keys : new Set([...keys].filter((key) => !freed.has(key)));
    const taking = new Set<string>();
    const taken: TakenRow[] = [];
    const perKey = this.#table.advisoryLimit;
    const busy = (key: string): boolean => busyKeys.has(key) || taking.has(key);
    for (const candidate of this.#candidateRows(busyKeys, now, limit)) {
      if (taken.length >= limit) break;
      const key = candidate.rkey;
      const rowKey = perKey > 1 ? advisoryRowKey(key, String(candidate.rid)) : undefined;
      const slot = perKey > 1 ? freeAdvisorySlots(key, perKey, busy)[0] : busy(key) ? undefined : key;
      if (slot === undefined || (rowKey !== undefined && busy(rowKey))) continue;
      const row = this.#take.get({ id: candidate.rid, group, now }) as RawClaimedRow | undefined;
      if (row === undefined) continue;
      taking.add(slot);
      if (rowKey !== undefined) taking.add(rowKey);
      taken.push({ row, key: slot, rowKey });
    }
    return taken;
  }

  /**
   * Up to `limit` × {@link CANDIDATES_PER_ROW} candidates, the first row of each free key in
   * claim order: first from a window of that many rows; when that window was full and held
   * fewer than `limit` keys, from a wider one ({@link CANDIDATE_WINDOW}, or 8 × as many).
   */
  #candidateRows(keys: ReadonlySet<string>, now: number, limit: number): { rid: unknown; rkey: string }[] {
    const wanted = limit * CANDIDATES_PER_ROW;
    const perKey = this.#table.advisoryLimit;
    const held = perKey === 1 ? [...keys] : fullKeys(keys, perKey);
    const values = { ...this.#key.literals, group: this.#context.group, now, held: JSON.stringify(held) };
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
      statement = this.#context.db.prepare(advisoryCandidatesSql(this.#columns, this.#key.sql, window));
      this.#candidatesByWindow.set(window, statement);
    }
    return statement;
  }

  /**
   * Runs the settlement (busy contention retried while the key stays held), then drops the key.
   *
   * @throws {LeaseLostError} the row was gone or finished; nothing changed (the key is dropped).
   */
  async settle(token: HeldKey, row: ClaimedRow, settlement: Settlement): Promise<void> {
    const { db, busy } = this.#context;
    const context = {
      table: this.#table.name,
      operation: `the ${settlement.kind} settlement of row ${String(row.id)}`,
    };
    let changed: number;
    try {
      changed = await retryBusyAs(db, busy, context, () =>
        this.#settlements.apply(row.id, undefined, settlement),
      );
    } finally {
      token.drop();
    }
    if (changed === 0) throw advisoryRowGone(this.#table.name, row.id, token.key, settlement.kind);
  }

  /** Transactional handlers (`transactional.ts`): a body that fails keeps the key (the delivery settles later); anything else drops it. */
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
