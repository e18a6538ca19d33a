/**
 * The type parsers of the pools the driver makes: `pg`'s, but `timestamp with time zone` in the
 * ISO shape PostgreSQL prints is read without `postgres-date`'s regular expressions (one of the
 * largest costs of reading a claim), to the same `Date`. Any other text, or a parser the
 * application set, is left to `pg`.
 *
 * @module
 */
import { createRequire } from "node:module";

/** `timestamp with time zone`. */
const TIMESTAMPTZ_OID = 1184;

/** A value parser, as `pg` keeps them per type. */
type Parser = (text: string) => unknown;

/** The type registry `pg` consults (`pg.types`, or a pool's `types`). */
export interface TypeParsers {
  getTypeParser(oid: number, format?: "text" | "binary"): unknown;
}

/** `postgres-date`, the module `pg`'s type registry parses timestamps with, where it can be found. */
function loadPostgresDate(): unknown {
  try {
    const require = createRequire(import.meta.url);
    const pgTypes = createRequire(require.resolve("pg")).resolve("pg-types");
    return createRequire(pgTypes)("postgres-date");
  } catch {
    return undefined;
  }
}

const postgresDate = loadPostgresDate();

/** The digits of `text` from `start` to `end` as a number; -1 where one is not an ASCII digit. */
function digits(text: string, start: number, end: number): number {
  let value = 0;
  for (let index = start; index < end; index += 1) {
    const code = text.charCodeAt(index) - 48;
    if (code < 0 || code > 9) return -1;
    value = value * 10 + code;
  }
  return value;
}

/**
 * Reads `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]` (year 1000 to 9999) as `postgres-date` does;
 * `undefined` for any other text.
 */
export function readTimestamptz(text: string): Date | undefined {
  const length = text.length;
  if (
    length < 22 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(0) === 48
  ) {
    return undefined;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 7);
  const day = digits(text, 8, 10);
  const hour = digits(text, 11, 13);
  const minute = digits(text, 14, 16);
  const second = digits(text, 17, 19);
  if ((year | month | day | hour | minute | second) < 0) return undefined;
  let at = 19;
  let ms = 0;
  if (text.charCodeAt(at) === 46) {
    const start = at + 1;
    at = start;
    while (at < length && at - start < 7) {
      const code = text.charCodeAt(at);
      if (code < 48 || code > 57) break;
      at += 1;
    }
    const count = at - start;
    if (count === 0 || count > 6) return undefined;
    // The first three digits: `postgres-date`'s `1000 * parseFloat(".ffffff")`, truncated by `Date.UTC`.
    ms = digits(text, start, Math.min(at, start + 3));
    for (let shown = count; shown < 3; shown += 1) ms *= 10;
  }
  const sign = text.charCodeAt(at);
  if ((sign !== 43 && sign !== 45) || at + 3 > length) return undefined;
  const zoneHours = digits(text, at + 1, at + 3);
  let zoneMinutes = 0;
  let zoneSeconds = 0;
  at += 3;
  if (at < length) {
    if (text.charCodeAt(at) !== 58 || at + 3 > length) return undefined;
    zoneMinutes = digits(text, at + 1, at + 3);
    at += 3;
    if (at < length) {
      if (text.charCodeAt(at) !== 58 || at + 3 !== length) return undefined;
      zoneSeconds = digits(text, at + 1, at + 3);
    }
  }
  if ((zoneHours | zoneMinutes | zoneSeconds) < 0 || month < 1 || month > 12 || day < 1 || day > 31) {
    return undefined;
  }
  const offset = (zoneHours * 3600 + zoneMinutes * 60 + zoneSeconds) * (sign === 45 ? -1 : 1);
  const seconds = daysSinceEpoch(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
  return new Date(seconds * 1000 + ms);
}

/**
 * The days from 1970-01-01 to a date of the proleptic Gregorian calendar (as `Date.UTC` counts
 * them, without its call): March-based years, so that the leap day ends the year.
 */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** `inherited`'s parsers (read at each lookup), with {@link readTimestamptz} before `postgres-date` for timestamptz. */
export function driverTypeParsers(inherited: TypeParsers): TypeParsers {
  const fallback = postgresDate;
  if (typeof fallback !== "function") return inherited;
  const parseDate = fallback as Parser;
  // The last text read: rows published together share one timestamp, read once (each a `Date` of its own).
  let lastText = "";
  let lastMs = 0;
  const parse: Parser = (text) => {
    if (text === lastText) return new Date(lastMs);
    const read = readTimestamptz(text);
    if (read === undefined) return parseDate(text);
    lastText = text;
    lastMs = read.getTime();
    return read;
  };
  return {
    getTypeParser(oid: number, format: "text" | "binary" = "text"): unknown {
      const parser = inherited.getTypeParser(oid, format);
      return oid === TIMESTAMPTZ_OID && format === "text" && parser === parseDate ? parse : parser;
    },
  };
}
