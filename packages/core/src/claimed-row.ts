/**
 * Decoding a row a claim read into the broker's {@link ClaimedRow}: the same in every driver,
 * so written once. A driver hands over the row's described columns by name, after its own
 * client's quirks (a column read as text under an alias, a row read as an array).
 *
 * @module
 */
import { decodeHeaders, decodePayload } from "./payload.js";
import type { ClaimedRow, RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/** A claimed row's described columns by name, as the driver's client read them. */
export type RawClaimedRow = Record<string, unknown>;

/**
 * Whether the statement that read the row had already counted this delivery's attempt.
 *
 * The attempt accounting rule: a delivery reports the attempt **as it stood before its claim**,
 * so the first delivery reads 1 in every form. The lease form counts at the claim and the
 * advisory form at the take (both write `attempt + 1` and read the row back): they pass `true`,
 * and the value read is one more than the delivery reports. The row lock form counts at the
 * settlement, and operations read rows without claiming them: they pass `false`.
 */
export type AttemptCounting = boolean;

/**
 * Decodes one claimed row.
 *
 * - `payload`: decoded by the table's `payloadType` ({@link decodePayload}); bytes come back as a
 *   plain `Uint8Array` (a view on the client's `Buffer`, not a copy).
 * - `attempt`: the attempt column's value as it stood before the claim (see
 *   {@link AttemptCounting}); 1 for a table without an attempt column or a row whose column is
 *   NULL.
 * - `group`: the group column as a string, or `null` (NULL, or a table without groups).
 * - `headers`: the headers column decoded ({@link decodeHeaders}), `{}` without one.
 * - `row`: `columns` itself, frozen: the driver passes a record it owns.
 *
 * `payloadRead`: the payload where the client read it apart from the row (PostgreSQL reads a
 * `json`/`jsonb` payload as text under an alias, so that it is parsed once): it is decoded instead
 * of `columns[payload]`, and `row[payload]` then holds the decoded value, as the client would
 * have parsed it. Leave it `undefined` otherwise.
 */
export function decodeClaimedRow(
  table: TableDefinition,
  columns: RawClaimedRow,
  attemptCounted: AttemptCounting,
  payloadRead?: unknown,
): ClaimedRow {
  const names = table.columns;
  let payload = decodePayload(table, payloadRead === undefined ? columns[names.payload] : payloadRead);
  if (payload instanceof Uint8Array && payload.constructor !== Uint8Array) {
    payload = new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
  }
  if (payloadRead !== undefined) columns[names.payload] = payload;
  const group = names.group === undefined ? null : columns[names.group];
  return {
    id: columns[names.id] as RowId,
    payload,
    attempt: names.attempt === undefined ? 1 : attemptOf(columns[names.attempt], attemptCounted),
    group: group === null || group === undefined ? null : typeof group === "string" ? group : String(group),
    headers: names.headers === undefined ? {} : decodeHeaders(columns[names.headers]),
    row: Object.freeze(columns),
  };
}

/** The attempt a delivery reports from the attempt column's value (see {@link AttemptCounting}). */
function attemptOf(value: unknown, counted: boolean): number {
  if (value === null || value === undefined) return 1;
  const read = Number(value);
  if (!Number.isFinite(read)) return 1;
  return counted ? read - 1 : read;
}
