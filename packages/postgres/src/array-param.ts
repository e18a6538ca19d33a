/**
 * Array parameters (the ids and tokens of a coalesced settlement or an extension) that `pg`
 * renders in one pass through `toPostgres`, each element with `pg`'s own renderer, a run of
 * equal elements (every token of one claim is the same `Date`) once.
 *
 * @module
 */

/** `pg`'s renderer of one parameter value, as it passes it to `toPostgres`. */
export type RenderValue = (value: unknown) => unknown;

/** An array parameter `pg` renders with `toPostgres` (see the module's notes). */
export class ArrayParam {
  readonly #values: readonly unknown[];

  constructor(values: readonly unknown[]) {
    this.#values = values;
  }

  /** The values, as given. */
  get values(): readonly unknown[] {
    return this.#values;
  }

  /** The PostgreSQL array literal (`{"1","2"}`, `NULL` for `null` or `undefined`), a run of equal elements rendered once. */
  toPostgres(render: RenderValue): string {
    const values = this.#values;
    const texts = new Array<string>(values.length);
    let previous: unknown;
    let previousText = "";
    for (let index = 0; index < values.length; index += 1) {
      const value = values[index];
      if (value === null || value === undefined) {
        texts[index] = "NULL";
        continue;
      }
      if (index === 0 || !sameValue(value, previous)) {
        previous = value;
        previousText = quoteElement(elementText(render(value)));
      }
      texts[index] = previousText;
    }
    return `{${texts.join(",")}}`;
  }
}

/**
 * One array parameter kept for the process's life, so that the code rendering them stays compiled
 * across an idle spell (the conformance package's DRIVERS.md, "The hot path").
 */
export const KEPT_ARRAY_PARAM = new ArrayParam([]);

/** Whether two elements render the same: the same value, or `Date`s of the same instant. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
}

/** The text of one rendered element: bytes (a `bytea` id) in the hex form, anything else as text. */
function elementText(rendered: unknown): string {
  if (rendered instanceof Uint8Array) {
    return `\\x${Buffer.from(rendered.buffer, rendered.byteOffset, rendered.byteLength).toString("hex")}`;
  }
  return String(rendered);
}

/** An element of an array literal: double-quoted, with `\` and `"` escaped by `\`. */
function quoteElement(text: string): string {
  if (text.indexOf("\\") === -1 && text.indexOf('"') === -1) return `"${text}"`;
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}
