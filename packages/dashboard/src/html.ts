/**
 * HTML built by escaping: every interpolated value goes through {@link escapeHtml} unless it is
 * already {@link SafeHtml} (made by {@link html} itself). Nothing else produces markup, so a row's
 * payload, a group name or a search term can never become a tag or an attribute.
 *
 * @module
 */

const brand: unique symbol = Symbol("rowclaim.dashboard.SafeHtml");

/** Markup that is safe to send: made by {@link html} or {@link trustedHtml}. */
export interface SafeHtml {
  readonly [brand]: true;
  /** The markup. */
  readonly text: string;
}

/** What {@link html} interpolates: text (escaped), numbers, markup, lists of those; `null`, `undefined` and `false` print nothing. */
export type HtmlValue =
  | SafeHtml
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | readonly HtmlValue[];

const replacements: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
};

/** Escapes `text` for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => replacements[character] ?? character);
}

/** Wraps markup known to be safe (a constant of this package). Never pass user input. */
export function trustedHtml(text: string): SafeHtml {
  return { [brand]: true, text };
}

/** Whether `value` is {@link SafeHtml}. */
export function isSafeHtml(value: unknown): value is SafeHtml {
  return typeof value === "object" && value !== null && brand in value;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  if (isSafeHtml(value)) return value.text;
  return escapeHtml(String(value));
}

/** A tagged template: the literal parts are markup, every `${value}` is escaped (see {@link HtmlValue}). */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let text = strings[0] ?? "";
  for (let index = 0; index < values.length; index += 1) {
    text += render(values[index]) + (strings[index + 1] ?? "");
  }
  return trustedHtml(text);
}
