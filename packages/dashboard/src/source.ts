/**
 * Every read and every action of the dashboard, each one call of a core function: the counts
 * (`readQueueStatus`), rows (`listRows`, `rowDetail`), the actions (`retryNow`, `cancel`,
 * `remove`, `redrive`) and pause state. Nothing here writes SQL; a driver without a capability
 * fails with core's `UNSUPPORTED_FORM`, which the pages show.
 *
 * @module
 */
import {
  type Broker,
  BrokerError,
  cancel,
  type Driver,
  deadLetterTable,
  keyColumnOf,
  type ListRowsOptions,
  listRows,
  type QueueRow,
  type QueueStatus,
  type RowFilter,
  type RowId,
  type RowPage,
  type RowState,
  readQueueStatus,
  redrive,
  remove,
  retryNow,
  rowDetail,
  type TableDefinition,
} from "@rowclaim/core";
import type { ListQuery, RowAction } from "./model.js";

/** Whether a table, and which of its groups, are paused. */
export interface PauseState {
  /** The whole table. */
  readonly table: boolean;
  /** The groups paused on their own. */
  readonly groups: ReadonlySet<string | null>;
  /** Whether the driver keeps pauses at all (`capabilities.controls`). */
  readonly supported: boolean;
}

const notPaused: PauseState = Object.freeze({
  table: false,
  groups: new Set<string | null>(),
  supported: false,
});

/** What a bulk step reports: the rows changed and the cursor of the next batch. */
export interface ActionStep {
  readonly changed: number;
  readonly next: RowId | undefined;
}

/** The outcome of an action on chosen rows. */
export interface ActionOutcome {
  readonly changed: number;
  /** Rows left alone because they are in work. */
  readonly inWork: number;
  /** Rows the action could not change (gone, or in another state). */
  readonly missing: number;
}

/** How ids travel through HTML: as text; whole numbers go back to core as numbers. */
export function idFromText(text: string): RowId {
  return /^(0|[1-9][0-9]{0,15})$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
}

/** The dashboard's access to its tables through core. */
export class QueueSource {
  readonly driver: Driver;
  readonly #broker: Broker;
  readonly #tables: ReadonlyMap<string, TableDefinition>;
  readonly #cap: number;

  /** `broker` carries the driver; pauses go through its `pause`, `resume` and `controlState`. */
  constructor(broker: Broker, tables: readonly TableDefinition[], cap: number) {
    this.#broker = broker;
    this.driver = broker.driver;
    this.#tables = new Map(tables.map((table) => [table.name, table]));
    this.#cap = cap;
  }

  /** The table named `name`, or `undefined`. */
  table(name: string): TableDefinition | undefined {
    return this.#tables.get(name);
  }

  /** The tables, in the order given. */
  get tables(): readonly TableDefinition[] {
    return [...this.#tables.values()];
  }

  /** The table's counts per group (core's `readQueueStatus`, capped). */
  status(table: TableDefinition): Promise<QueueStatus> {
    return readQueueStatus(this.driver, table, { cap: this.#cap });
  }

  /** Whether the table and which of its groups are paused (core's `controlState`). */
  async pauseState(table: TableDefinition): Promise<PauseState> {
    if (this.driver.capabilities.controls !== true) return notPaused;
    const state = await this.#broker.controlState(table);
    return { table: state.paused, groups: new Set(state.pausedGroups), supported: true };
  }

  /** Pauses or resumes the table, or one group of it (core's `pause` and `resume`). */
  async setPaused(table: TableDefinition, group: string | undefined, paused: boolean): Promise<void> {
    const options = group === undefined ? {} : { group };
    if (paused) await this.#broker.pause(table, options);
    else await this.#broker.resume(table, options);
  }

  /**
   * One page of a list (core's `listRows`). A search finds the row whose id it is, the rows of
   * the key it names (tables with a key column) and the rows whose payload contains it: on the
   * first page the id and key matches come first; later pages follow the payload search.
   */
  async list(
    table: TableDefinition,
    query: ListQuery,
    after: RowId | undefined,
    limit: number,
    textSearch: boolean,
  ): Promise<RowPage> {
    const base: RowFilter =
      query.group === undefined || table.columns.group === undefined ? {} : { group: query.group };
    const options = (filter: RowFilter): ListRowsOptions => ({
      state: query.state,
      filter,
      limit,
      ...(after === undefined ? {} : { after }),
    });
    if (query.search === undefined) return listRows(this.driver, table, options(base));
    const search = query.search;
    const exact: QueueRow[] = [];
    if (after === undefined) {
      exact.push(...(await this.#byId(table, options({ ...base, ids: [idFromText(search)] }))));
      if (keyColumnOf(table) !== undefined) {
        const byKey = await listRows(this.driver, table, options({ ...base, keys: [search] }));
        exact.push(...byKey.rows);
      }
    }
    if (!textSearch || (exact.length > 0 && query.inPayloads !== true))
      return { rows: unique(exact), next: undefined };
    const byText = await listRows(this.driver, table, options({ ...base, text: search }));
    return { rows: unique([...exact, ...byText.rows]), next: byText.next };
  }

  /** The rows of an id search: none when the text is no id the column can hold (a word in a bigint column). */
  async #byId(table: TableDefinition, options: ListRowsOptions): Promise<readonly QueueRow[]> {
    try {
      return (await listRows(this.driver, table, options)).rows;
    } catch (error) {
      if (BrokerError.is(error, "INVALID_ARGUMENT")) return [];
      throw error;
    }
  }

  /** One row (core's `rowDetail`); `dead` reads a table dead letter's own table. */
  detail(table: TableDefinition, id: RowId, dead: boolean): Promise<QueueRow | undefined> {
    const deadTable = table.deadLetter !== undefined && "table" in table.deadLetter;
    return rowDetail(this.driver, table, id, dead && deadTable ? { dead: true } : {});
  }

  /** Runs `action` on the rows `ids`, in core's bounded batches. */
  async act(
    table: TableDefinition,
    action: RowAction,
    ids: readonly RowId[],
    state: RowState,
    batchSize: number,
  ): Promise<ActionOutcome> {
    if (action === "redrive") {
      const { redriven } = await redrive(this.driver, table, { ids }, { batchSize });
      return { changed: redriven, inWork: 0, missing: ids.length - redriven };
    }
    const run = action === "retry" ? retryNow : action === "cancel" ? cancel : remove;
    // A table dead letter's rows live in their own table: removed through its definition.
    const target = action === "delete" && state === "dead" ? (deadLetterTable(table) ?? table) : table;
    const result = await run(this.driver, target, { ids }, { batchSize });
    return { changed: result.changed.length, inWork: result.inWork.length, missing: result.missing.length };
  }

  /**
   * One batch of an action over everything `query` matches: the next `batchSize` rows after
   * `after` (core's `listRows`), then the action on them. The cursor moves past every row seen,
   * so rows the action leaves in place (in work, or still matching) are not taken twice.
   */
  async actBatch(
    table: TableDefinition,
    action: RowAction,
    query: ListQuery,
    after: RowId | undefined,
    batchSize: number,
    textSearch: boolean,
  ): Promise<ActionStep> {
    const page = await this.list(table, query, after, batchSize, textSearch);
    const ids = page.rows.map((row) => row.id);
    if (ids.length === 0) return { changed: 0, next: undefined };
    const outcome = await this.act(table, action, ids, query.state, batchSize);
    return { changed: outcome.changed, next: page.next };
  }

  /** Redrives every dead row a search matches (or all of them), with core's own batches and progress. */
  redriveAll(
    table: TableDefinition,
    search: string | undefined,
    batchSize: number,
    onProgress: (done: number) => void,
  ): Promise<number> {
    return redrive(this.driver, table, search === undefined ? { all: true } : { filter: { text: search } }, {
      batchSize,
      onProgress: (progress) => onProgress(progress.done),
    }).then((result) => result.redriven);
  }
}

/** A message for people from an error core (or the database) raised, with its code. */
export function describeFailure(error: unknown): string {
  if (BrokerError.is(error)) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

function unique(rows: readonly QueueRow[]): QueueRow[] {
  const seen = new Set<string>();
  return rows.filter((row) => {
    const key = String(row.id);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
