/**
 * Encoding and decoding of payloads and headers, shared by every driver so that a message
 * reads back the same on every database.
 *
 * @module
 */
import { InvalidArgumentError } from "./errors.js";
import { jsonProblem } from "./json-check.js";
import type { Headers } from "./rows.js";
import type { TableDefinition } from "./table.js";

const utf8 = new TextDecoder("utf-8", { fatal: false });

/**
 * Encodes a payload for the table's payload column: JSON text for `json`, the string itself
 * for `text`, the bytes for `bytes`.
 *
 * @throws {InvalidArgumentError} when the value does not fit the payload type (a non-string for
 * `text`, a non-`Uint8Array` for `bytes`; for `json` anything JSON would not keep unchanged —
 * `undefined`, `NaN`, `Infinity`, a function, a bigint, a `Map`, a `Set`, a `Date` or another
 * class instance, at any depth — or a value `JSON.stringify` rejects).
 */
export function encodePayload(table: TableDefinition, value: unknown): string | Uint8Array {
  switch (table.payloadType) {
    case "text":
      if (typeof value !== "string") {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds text payloads: publish a string, not ${describe(value)}.`,
          {
            table: table.name,
          },
        );
      }
      if (loneSurrogateAt(value) !== -1) {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds text payloads, and this string is not well-formed UTF-16 (it holds a lone surrogate, at index ${loneSurrogateAt(value)}), so no database can store it unchanged. Publish a well-formed string (String.prototype.toWellFormed() replaces lone surrogates with U+FFFD).`,
          { table: table.name },
        );
      }
      return value;
    case "bytes":
      if (!(value instanceof Uint8Array)) {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds byte payloads: publish a Uint8Array or Buffer, not ${describe(value)}.`,
          { table: table.name },
        );
      }
      return value;
    case "json": {
      const problem = jsonProblem(value);
      if (problem !== undefined) {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds JSON payloads, and the payload holds ${problem.found} at ${problem.path}, which JSON would not keep unchanged. Publish plain objects and arrays of strings, finite numbers, booleans and null (for a Date, its toISOString()).`,
          { table: table.name },
        );
      }
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch (cause) {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds JSON payloads, and this payload cannot be written as JSON.`,
          {
            table: table.name,
            cause,
          },
        );
      }
      if (text === undefined) {
        throw new InvalidArgumentError(
          `Table "${table.name}" holds JSON payloads: ${describe(value)} has no JSON form. Publish null, a number, a string, an array or an object.`,
          { table: table.name },
        );
      }
      return text;
    }
  }
}

/**
 * Decodes a payload column value read back from the database. For `json` the driver passes the
 * column's **text** (or bytes holding UTF-8 text), which is parsed as JSON; for `text` a string;
 * for `bytes` a `Uint8Array`.
 *
 * The JSON contract: payloads cross between core and a driver as JSON text, never as parsed
 * values. A `json` value that is not a string or bytes is passed through unchanged, as already
 * parsed; so a driver whose client parses JSON columns must not hand over the parsed value: a
 * payload published as the string `"2"` would come back from such a client as the JS string `2`,
 * which this function parses again into the number `2`. Read the column as text instead
 * (PostgreSQL: `payload::text`; mysql2: `jsonStrings: true`).
 */
export function decodePayload(table: TableDefinition, raw: unknown): unknown {
  switch (table.payloadType) {
    case "json": {
      const text = raw instanceof Uint8Array ? utf8.decode(raw) : raw;
      if (typeof text !== "string") return raw;
      return JSON.parse(text);
    }
    case "text":
      return raw instanceof Uint8Array ? utf8.decode(raw) : raw;
    case "bytes":
      if (raw instanceof Uint8Array) return raw;
      if (typeof raw === "string") return new TextEncoder().encode(raw);
      return raw;
  }
}

/**
 * Encodes headers as JSON text, or `null` when there are none.
 *
 * @throws {InvalidArgumentError} when a header value is not a string.
 */
export function encodeHeaders(table: TableDefinition, headers: Headers | undefined): string | null {
  if (headers === undefined) return null;
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw new InvalidArgumentError(`Headers for table "${table.name}" must be an object of strings.`, {
      table: table.name,
    });
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") {
      throw new InvalidArgumentError(
        `Header "${name}" for table "${table.name}" must be a string, not ${describe(value)}.`,
        {
          table: table.name,
        },
      );
    }
  }
  return JSON.stringify(headers);
}

/**
 * Decodes a headers column value into a map; `{}` for none. Headers are written as JSON text
 * ({@link encodeHeaders}); reading them back, JSON text, UTF-8 bytes or an object the client
 * already parsed all work (a headers map is always an object, so parsing twice cannot change it).
 */
export function decodeHeaders(raw: unknown): Headers {
  if (raw === null || raw === undefined) return {};
  const parsed: unknown =
    typeof raw === "string"
      ? JSON.parse(raw)
      : raw instanceof Uint8Array
        ? JSON.parse(utf8.decode(raw))
        : raw;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {};
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed))
    out[name] = typeof value === "string" ? value : JSON.stringify(value);
  return out;
}

/** The index of the first lone surrogate of `text`, or -1. */
function loneSurrogateAt(text: string): number {
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i += 1;
        continue;
      }
      return i;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return i;
  }
  return -1;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
