/**
 * Turns a row as `pg` read it into core's `ClaimedRow`, and puts rows back into claim order
 * (an `UPDATE … RETURNING` returns them in no particular order).
 *
 * @module
 */
import {
  type ClaimedRow,
  decodeHeaders,
  decodePayload,
  type RowId,
  type TableDefinition,
} from "@rowclaim/core";
import { PAYLOAD_TEXT_ALIAS } from "./sql.js";

/**
 * Decodes one claimed row. `attemptCounted`: the claim already wrote `attempt + 1` (lease,
 * advisory), so the attempt as it stood before the claim is one less than the value read.
 * `known`: values of columns the statement did not return because the claim wrote them (a
 * lease's expiry). A json payload read as text (under `PAYLOAD_TEXT_ALIAS`) is parsed once and
 * the row's payload column holds the parsed value, as `pg` would have given it.
 */
export function decodeClaimedRow(
  table: TableDefinition,
  raw: Record<string, unknown>,
  attemptCounted: boolean,
  known?: Readonly<Record<string, unknown>>,
): ClaimedRow {
  const { columns } = table;
  const asText = PAYLOAD_TEXT_ALIAS in raw;
  const payloadRaw = asText ? raw[PAYLOAD_TEXT_ALIAS] : raw[columns.payload];
  let payload = decodePayload(table, payloadRaw);
  if (payload instanceof Uint8Array && payload.constructor !== Uint8Array) {
    payload = new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
  }
  let attempt = 1;
  if (columns.attempt !== undefined) {
    const read = Number(raw[columns.attempt]);
    attempt = Number.isFinite(read) ? read - (attemptCounted ? 1 : 0) : 1;
  }
  const group = columns.group === undefined ? null : raw[columns.group];
  const row: Record<string, unknown> = {};
  for (const column of table.allColumns) {
    row[column] =
      column === columns.payload && asText
        ? payload
        : known !== undefined && column in known
          ? known[column]
          : raw[column];
  }
  return {
    id: raw[columns.id] as RowId,
    payload,
    attempt,
    group: typeof group === "string" ? group : null,
    headers: columns.headers === undefined ? {} : decodeHeaders(raw[columns.headers]),
    row: Object.freeze(row),
  };
}

/**
 * What an id sorts by, computed once per row rather than once per comparison: a number as it
 * is, its text, and, where the text is a whole number in digits (how `pg` reads a `bigint`),
 * its sign and its digits without leading zeros.
 */
interface IdKey {
  readonly number: number | undefined;
  readonly text: string;
  readonly whole: { readonly negative: boolean; readonly digits: string } | undefined;
}

function idKey(id: unknown): IdKey {
  const text = String(id);
  let whole: IdKey["whole"];
  if (/^-?\d+$/.test(text)) {
    const negative = text.startsWith("-");
    const digits = (negative ? text.slice(1) : text).replace(/^0+(?=\d)/, "");
    // Minus zero is zero.
    whole = { negative: negative && digits !== "0", digits };
  }
  return { number: typeof id === "number" ? id : undefined, text, whole };
}

/** Two whole numbers written in digits, by value. */
function compareWhole(a: NonNullable<IdKey["whole"]>, b: NonNullable<IdKey["whole"]>): number {
  if (a.negative !== b.negative) return a.negative ? -1 : 1;
  const magnitude =
    a.digits.length !== b.digits.length
      ? a.digits.length - b.digits.length
      : a.digits < b.digits
        ? -1
        : a.digits > b.digits
          ? 1
          : 0;
  return a.negative ? -magnitude : magnitude;
}

/** Numbers by value; whole numbers in digits by value; anything else as text. */
function compareIds(a: IdKey, b: IdKey): number {
  if (a.number !== undefined && b.number !== undefined) return a.number - b.number;
  if (a.whole !== undefined && b.whole !== undefined) return compareWhole(a.whole, b.whole);
  return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
}

function timeOf(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.getTime();
  const parsed = new Date(String(value)).getTime();
  return Number.isNaN(parsed) ? null : parsed;
}

/** Sorts claimed rows into claim order: priority, then runAt with NULLs first, then id. */
export function sortIntoClaimOrder<T extends { readonly row: ClaimedRow }>(
  table: TableDefinition,
  items: T[],
): T[] {
  if (items.length < 2) return items;
  const { priority, runAt } = table.columns;
  // Each row's keys read once (not once per comparison); the sort is stable, as before.
  const keyed = items.map((item) => ({
    item,
    priority: priority === undefined ? 0 : Number(item.row.row[priority]),
    runAt: runAt === undefined ? null : timeOf(item.row.row[runAt]),
    id: idKey(item.row.id),
  }));
  keyed.sort((a, b) => {
    if (priority !== undefined) {
      const diff = a.priority - b.priority;
      if (diff !== 0 && Number.isFinite(diff)) return diff;
    }
    if (runAt !== undefined) {
      const x = a.runAt;
      const y = b.runAt;
      if (x !== y) {
        if (x === null) return -1;
        if (y === null) return 1;
        return x - y;
      }
    }
    return compareIds(a.id, b.id);
  });
  for (let index = 0; index < keyed.length; index += 1)
    items[index] = (keyed[index] as (typeof keyed)[number]).item;
  return items;
}
