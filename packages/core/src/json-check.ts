/**
 * Finds what JSON would change or drop in a payload: `JSON.stringify` writes `NaN` and
 * `Infinity` as `null`, a `Map` or a `Set` as `{}`, drops `undefined` properties and functions,
 * and writes a `Date` as a string. A JSON table refuses such a payload instead of storing
 * something other than what was published.
 *
 * @module
 */

/** What is wrong with a value as JSON, and where. */
export interface JsonProblem {
  /** Where in the value: `(root)`, `to`, `items[2].sku`. */
  readonly path: string;
  /** What the value there is, for people: "NaN", "a Map", "undefined". */
  readonly found: string;
}

/**
 * Returns the first place in `value` that JSON cannot hold unchanged, or `undefined` when it
 * reads back equal: plain objects and arrays of strings, finite numbers, booleans and `null`.
 * Cycles are left to `JSON.stringify`, which throws on them.
 */
export function jsonProblem(value: unknown): JsonProblem | undefined {
  return visit(value, "", 0);
}

function visit(value: unknown, path: string, depth: number): JsonProblem | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : { path: at(path), found: String(value) };
    case "undefined":
      return { path: at(path), found: "undefined" };
    case "function":
      return { path: at(path), found: "a function" };
    case "bigint":
      return { path: at(path), found: "a bigint" };
    case "symbol":
      return { path: at(path), found: "a symbol" };
  }
  if (value === null) return undefined;
  // Deeper than this, JSON.stringify's own cycle check is the better guard.
  if (depth > 200) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const problem = visit(value[i], `${path}[${i}]`, depth + 1);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return {
      path: at(path),
      found: typeof name === "string" && name !== "" ? `a ${name}` : "a class instance",
    };
  }
  for (const key of Object.keys(value as object)) {
    const child = (value as Record<string, unknown>)[key];
    const problem = visit(child, path === "" ? key : `${path}.${key}`, depth + 1);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function at(path: string): string {
  return path === "" ? "(root)" : path;
}
