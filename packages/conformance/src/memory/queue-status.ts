/**
 * The memory driver's status reader (`driver.queueStatus`): the counts `readQueueStatus` and the
 * rows `listInWork` report, read from the store. In work: rows a session holds a row lock on
 * (row lock form), rows whose `lockedUntil` is in the future (lease form), and, per advisory key
 * held now, the key's first open row in claim order (advisory form). Sessions have no ids here:
 * a holder names no session.
 *
 * @module
 */
import type { CappedCount, GroupCounts, InWorkRow, RowId, TableDefinition } from "@rowclaim/core";
import type { InWorkQuery, QueueStatusReader, StatusQuery, TableCounts } from "@rowclaim/core/driver";
import { claimOrder, renderKey, unfinished } from "./claim-order.js";
import { type MemoryDatabase, type MemoryRow, rowKey, timeOf } from "./store.js";

type State = "due" | "delayed" | "inWork" | "dead" | "processed";

interface Tally {
  readonly group: string | null;
  readonly counts: Record<State, number>;
  oldestDue: number | null;
}

/** The status reader over `database`. */
export function memoryStatusReader(
  database: MemoryDatabase,
  trip: (table: string) => Promise<void>,
): QueueStatusReader {
  return {
    async countGroups(table: TableDefinition, query: StatusQuery): Promise<TableCounts> {
      await trip(table.name);
      const tallies = new Map<string | null, Tally>();
      for (const { row, state } of classify(database, table, query.now, query.deadGroup)) {
        const group = groupOf(table, row);
        let tally = tallies.get(group);
        if (tally === undefined) {
          tally = {
            group,
            counts: { due: 0, delayed: 0, inWork: 0, dead: 0, processed: 0 },
            oldestDue: null,
          };
          tallies.set(group, tally);
        }
        tally.counts[state] += 1;
        if (state === "due") {
          const runAt = table.columns.runAt === undefined ? null : timeOf(row[table.columns.runAt]);
          if (runAt !== null && (tally.oldestDue === null || runAt < tally.oldestDue))
            tally.oldestDue = runAt;
        }
      }
      const capped = (count: number): CappedCount =>
        count > query.cap ? { count: query.cap, capped: true } : { count, capped: false };
      const groups = [...tallies.values()].map(
        (tally): GroupCounts => ({
          group: tally.group,
          due: capped(tally.counts.due),
          delayed: capped(tally.counts.delayed),
          inWork: capped(tally.counts.inWork),
          dead: capped(tally.counts.dead),
          processed: capped(tally.counts.processed),
          oldestDueAt: tally.oldestDue === null ? null : new Date(tally.oldestDue),
        }),
      );
      return { groups, inWorkScope: "database" };
    },
    async listInWork(table: TableDefinition, query: InWorkQuery): Promise<readonly InWorkRow[]> {
      await trip(table.name);
      const deadGroup =
        table.deadLetter !== undefined && "group" in table.deadLetter ? table.deadLetter.group : undefined;
      const rows = classify(database, table, query.now, deadGroup)
        .filter(
          ({ row, state }) =>
            state === "inWork" && (query.group === undefined || groupOf(table, row) === query.group),
        )
        .map(({ row }) => row)
        .sort(claimOrder(table))
        .slice(0, query.limit);
      const { id, attempt, lockedUntil } = table.columns;
      return rows.map((row): InWorkRow => {
        const held: InWorkRow = {
          id: row[id] as RowId,
          group: groupOf(table, row),
          holder:
            table.form === "lease" && lockedUntil !== undefined
              ? { form: "lease", lockedUntil: new Date(timeOf(row[lockedUntil]) ?? 0) }
              : table.form === "advisory"
                ? { form: "advisory", key: renderKey(table, row) }
                : { form: table.form },
        };
        return attempt === undefined ? held : { ...held, attempt: Number(row[attempt]) };
      });
    },
  };
}

function groupOf(table: TableDefinition, row: MemoryRow): string | null {
  const column = table.columns.group;
  if (column === undefined) return null;
  const value = row[column];
  return value === null || value === undefined ? null : String(value);
}

/** Every row of the table with its state at `now`. */
function classify(
  database: MemoryDatabase,
  table: TableDefinition,
  now: Date,
  deadGroup: string | undefined,
): { readonly row: MemoryRow; readonly state: State }[] {
  const data = database.requireTable(table, "read its status");
  const at = now.getTime();
  const { runAt, lockedUntil } = table.columns;
  const open: { key: string; row: MemoryRow }[] = [];
  const states: { row: MemoryRow; state: State }[] = [];
  for (const [key, row] of data.rows) {
    if (!unfinished(table, row)) states.push({ row, state: "processed" });
    else if (deadGroup !== undefined && groupOf(table, row) === deadGroup)
      states.push({ row, state: "dead" });
    else open.push({ key, row });
  }
  // Advisory: per key held now, its first open row in claim order is the one in work.
  const advisoryInWork = new Set<string>();
  if (table.form === "advisory") {
    const seen = new Set<string>();
    for (const { key, row } of [...open].sort((a, b) => claimOrder(table)(a.row, b.row))) {
      const rendered = renderKey(table, row);
      if (seen.has(rendered) || !database.keyHeld(rendered)) continue;
      seen.add(rendered);
      advisoryInWork.add(key);
    }
  }
  for (const { key, row } of open) {
    const inWork =
      table.form === "rowLock"
        ? data.locks.has(rowKey(row[table.columns.id]))
        : table.form === "lease"
          ? lockedUntil !== undefined && (timeOf(row[lockedUntil]) ?? Number.NEGATIVE_INFINITY) > at
          : advisoryInWork.has(key);
    const runAtTime = runAt === undefined ? null : timeOf(row[runAt]);
    states.push({ row, state: inWork ? "inWork" : runAtTime !== null && runAtTime > at ? "delayed" : "due" });
  }
  return states;
}
