/**
 * Rows as drivers hand them to the broker, and as the broker hands them to drivers to insert.
 *
 * @module
 */

/** A primary key value as the database client returns it. */
export type RowId = string | number | bigint;

/** A string-to-string map carried beside the payload, in the `headers` column. */
export type Headers = Readonly<Record<string, string>>;

/** A row a claim took, decoded by the driver. */
export interface ClaimedRow {
  /** The row's primary key. */
  readonly id: RowId;
  /**
   * The decoded payload: a JSON value, a string, or a `Uint8Array`, as the table's `payloadType`
   * says. Drivers decode it with `decodePayload` from the column's JSON **text** (not a value
   * their client parsed: see `decodePayload`).
   */
  readonly payload: unknown;
  /**
   * The attempt as it stood before this claim: the first delivery reads 1 in every form. A
   * table without an attempt column always reads 1.
   */
  readonly attempt: number;
  /** The row's group, or `null` (also on a table without a group column). */
  readonly group: string | null;
  /** The decoded headers, or `{}` where the table has no headers column or the row none. */
  readonly headers: Headers;
  /** Every described column as the client read it, by column name. */
  readonly row: Readonly<Record<string, unknown>>;
}

/** A row to insert, with every value already encoded for the table. */
export interface PublishRow {
  /**
   * The payload, already encoded by `encodePayload`: JSON text for `json`, a string for `text`, a
   * `Uint8Array` for `bytes`. Write it as it is (a JSON column takes the text).
   */
  readonly payload: string | Uint8Array;
  /** The group, or `null`. Ignored (must be null) on a table without a group column. */
  readonly group: string | null;
  /** When the row is due. The broker writes the host's "now" when the publisher gave none. */
  readonly runAt: Date | null;
  /** The priority, or `null` for the column's default. */
  readonly priority: number | null;
  /** The headers as JSON text (`encodeHeaders`), or `null`. Write it as it is. */
  readonly headers: string | null;
  /** Values for `extraColumns`, by column name. */
  readonly values: Readonly<Record<string, unknown>>;
}
