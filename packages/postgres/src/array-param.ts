/**
 * Array parameters that `pg` turns into text once per statement, not once per element: the ids
 * and tokens of a coalesced settlement or an extension (up to 500 each).
 *
 * `pg` renders an array parameter element by element (a type check, a string escape and, for a
 * `Date`, a local-time rendering, for each), and every token of one claim is the same `Date`.
 * An {@link ArrayParam} is an object with `toPostgres`, which `pg` calls with its own value
 * renderer: each element is rendered by `pg` as before (so a `Date` reads as `pg` would send
 * it, `parseInputDatesAsUTC` included), but an element equal to the one before it is rendered
 * once, and the PostgreSQL array literal is built in one pass.
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

  /**
   * The PostgreSQL array literal (`{"1","2"}`): every element double-quoted with `\` and `"`
   * escaped, `NULL` for `null` or `undefined`. A run of equal elements (the same `Date`, or
   * `Date`s of the same instant) is rendered once.
   */
  toPostgres(render: RenderValue): string {
    const values = this.#values;
    // The elements' texts joined once, not a chain of `+=` (two strings an element).
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
