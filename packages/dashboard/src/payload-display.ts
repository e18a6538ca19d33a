/**
 * Payloads and headers as text for the pages, after the dashboard's {@link PayloadDisplay}
 * (shown, hidden, or redacted by the user's callback).
 *
 * @module
 */
import type { QueueRow, TableDefinition } from "@rowclaim/core";
import type { PayloadDisplay } from "./options.js";

/** What a list shows of a payload at most, in characters. */
export const PREVIEW_LENGTH = 160;

/** The text shown for a hidden payload. */
export const HIDDEN = "(hidden)";

/** The payload of `row` as the pages may show it, or `undefined` when it is hidden. */
export function shownPayload(display: PayloadDisplay, table: TableDefinition, row: QueueRow): unknown {
  if (display === "hide") return undefined;
  if (display === "show") return row.payload;
  return display(row.payload, { table, row });
}

/** A value as text: strings as they are, bytes by their length and first bytes, the rest as JSON. */
export function valueText(value: unknown, pretty: boolean): string {
  if (value === undefined) return HIDDEN;
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) {
    const head = [...value.subarray(0, 32)].map((byte) => byte.toString(16).padStart(2, "0")).join(" ");
    return `${value.length} bytes: ${head}${value.length > 32 ? " …" : ""}`;
  }
  try {
    const text = JSON.stringify(
      value,
      (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item),
      pretty ? 2 : undefined,
    );
    return text ?? String(value);
  } catch {
    return String(value);
  }
}

/** A payload's one-line preview for a list. */
export function previewText(display: PayloadDisplay, table: TableDefinition, row: QueueRow): string {
  const text = valueText(shownPayload(display, table, row), false).replace(/\s+/g, " ");
  return text.length > PREVIEW_LENGTH ? `${text.slice(0, PREVIEW_LENGTH - 1)}…` : text;
}

/** A row's headers as text for its page, or `undefined` when it has none; hidden with the payload. */
export function headersText(display: PayloadDisplay, row: QueueRow): string | undefined {
  if (Object.keys(row.headers).length === 0) return undefined;
  if (display === "hide") return HIDDEN;
  return valueText(row.headers, true);
}
