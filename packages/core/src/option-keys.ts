/**
 * The generic parts of option checks, which every module that checks options uses: the nearest
 * valid key to an unknown one, and how a value is named in a message. A leaf module (it imports
 * only the errors), so that the modules whose option types it checks can import it.
 *
 * @module
 */
import { InvalidArgumentError } from "./errors.js";

/** Every key of `T` (optional ones included), as an object whose values are `true`. */
export type KeySet<T> = { readonly [K in keyof Required<T>]: true };

/**
 * Returns the first key of `given` that is not in `allowed`, with the advice to show: the nearest
 * valid key when one is close (`did you mean \`priority\`?`), else the list of valid keys.
 * `undefined` when every key is known. Keys whose value is `undefined` are checked too: a
 * misspelled key is a mistake whatever its value.
 */
export function unknownKey(
  given: object,
  allowed: readonly string[],
): { readonly key: string; readonly advice: string } | undefined {
  for (const key of Object.keys(given)) {
    if (allowed.includes(key)) continue;
    const nearest = nearestKey(key, allowed);
    const advice =
      nearest === undefined
        ? `The keys are ${allowed.map((name) => `\`${name}\``).join(", ")}.`
        : `Did you mean \`${nearest}\`?`;
    return { key, advice };
  }
  return undefined;
}

/**
 * Every key of every member of an option type (a union such as `{ pool } | { url }` included),
 * each `true`: a driver writes its key list as such an object with `satisfies`, so that an option
 * added to the type but not to the list fails the build.
 */
export type OptionKeySet<T> = { readonly [K in T extends unknown ? keyof T : never]-?: true };

/**
 * Refuses an option object with a key not in `allowed`, as `createBroker()` refuses its own: for
 * driver factories (`call` names the factory, for example `"createMysqlDriver()"`).
 *
 * @throws {InvalidArgumentError} naming the key and the nearest valid one (or the valid keys).
 */
export function refuseUnknownOptions(given: object, allowed: readonly string[], call: string): void {
  const unknown = unknownKey(given, allowed);
  if (unknown === undefined) return;
  throw new InvalidArgumentError(`${call}: unknown option \`${unknown.key}\`. ${unknown.advice}`);
}

/**
 * The valid key nearest to `key` by edit distance (case-insensitive), when it is near enough to
 * be a misspelling: at most a third of the key's length, and at least one edit. `undefined`
 * otherwise.
 */
export function nearestKey(key: string, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const limit = Math.max(1, Math.floor(Math.max(key.length, 3) / 3));
  return bestDistance <= limit ? best : undefined;
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i += 1) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j += 1) row.push(i === 0 ? j : 0);
    rows.push(row);
  }
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, at(i - 2, j - 2) + 1);
      }
      (rows[i] as number[])[j] = value;
    }
  }
  return at(a.length, b.length);
}

/**
 * How a value is named in a refusal: `null`, `undefined`, `an array`, `NaN`, `a string ("4")`,
 * `a number (2.5)`, `an object`, … — the type it has, and for short primitives the value.
 */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid Date" : "a Date";
  switch (typeof value) {
    case "string": {
      const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
      return `a string (${JSON.stringify(shown)})`;
    }
    case "number":
      return Number.isNaN(value) ? "NaN" : `a number (${String(value)})`;
    case "bigint":
      return `a bigint (${String(value)}n)`;
    case "boolean":
      return `a boolean (${String(value)})`;
    case "object":
      return "an object";
    default:
      return `a ${typeof value}`;
  }
}
