/**
 * Pure helpers for reading rows back as the harness's client returns them: numbers may come as
 * `bigint` or numeric strings, times as `Date`, ISO text or epoch numbers, bytes as `Buffer`.
 *
 * @module
 */

/** A column value read as a number (`bigint` and numeric strings included); `NaN` when it is not one. */
export function toNumber(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value))) return Number(value);
  return Number.NaN;
}

/**
 * A time column value as epoch milliseconds: a `Date`, epoch seconds or milliseconds (a number,
 * `bigint` or numeric string; below 10^11 it is read as seconds), or date text (text without a
 * zone is read as UTC). `NaN` when it is none of these.
 */
export function toMillis(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  const asNumber = toNumber(value);
  if (!Number.isNaN(asNumber)) return Math.abs(asNumber) < 1e11 ? asNumber * 1000 : asNumber;
  if (typeof value !== "string") return Number.NaN;
  const text = value.trim();
  const hasZone = /(?:[zZ]|[+-]\d\d(?::?\d\d)?)$/.test(text);
  return Date.parse(hasZone ? text : `${text.replace(" ", "T")}Z`);
}

/** A time column value in a form `toEqual` compares by instant: a `Date` becomes its epoch milliseconds, anything else stays. */
export function instant(value: unknown): unknown {
  return value instanceof Date ? value.getTime() : value;
}

/** Whether a column value is SQL NULL as the client returns it (`null` or `undefined`). */
export function isNull(value: unknown): boolean {
  return value === null || value === undefined;
}

/** A row id as a string key, whatever type the client returned it as. */
export function idKey(id: unknown): string {
  return String(id);
}

/** Whether two byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The prefix of every table the suite creates unless the harness names another. */
export const DEFAULT_TABLE_PREFIX = "rc_";

/**
 * A table name unique to one test: `<prefix><suite>_<8 random hex digits>` (prefix `rc_` unless
 * given), lower case, at most 40 characters with the default prefix, so it is a plain identifier
 * on every database and leaves room for suffixes.
 *
 * @throws {Error} when `prefix` is not a plain identifier start (lower-case letters, digits and
 * `_`, starting with a letter, at most 16 characters).
 */
export function uniqueTableName(
  suite: string,
  random: () => number = Math.random,
  prefix: string = DEFAULT_TABLE_PREFIX,
): string {
  assertTablePrefix(prefix);
  const slug =
    suite
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, 20) || "t";
  let suffix = "";
  for (let i = 0; i < 8; i += 1) suffix += Math.floor(random() * 16).toString(16);
  return `${prefix}${slug}_${suffix}`;
}

/**
 * Checks a harness's table prefix: lower-case letters, digits and `_`, starting with a letter, at
 * most 16 characters, so that every name the suite makes stays a plain identifier that fits every
 * database's limit (MySQL: 64 characters) with the suffixes the tests add.
 *
 * @throws {Error} naming the prefix and the rule.
 */
export function assertTablePrefix(prefix: string): void {
  if (!/^[a-z][a-z0-9_]{0,15}$/.test(prefix)) {
    throw new Error(
      `@rowclaim/conformance: the table prefix ${JSON.stringify(prefix)} is not usable: use lower-case letters, digits and "_", starting with a letter, at most 16 characters (for example "rc_" or "mydb_ci_").`,
    );
  }
}

/** `count` bytes of a deterministic pseudo-random sequence (every byte value appears in a long run). */
export function patternBytes(count: number, seed = 1): Uint8Array {
  const out = new Uint8Array(count);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < count; i += 1) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    out[i] = state & 0xff;
  }
  return out;
}
