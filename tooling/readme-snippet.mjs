// The one check behind every "the README shows this tested file" test: a README's code block is
// the region of an example file that a test runs, so the README cannot drift from working code.
import { readFileSync } from "node:fs";

/**
 * The lines of `file` between `// #region <name>` and `// #endregion <name>`, unindented by the
 * first line's indentation, joined with newlines.
 */
export function exampleRegion(file, name) {
  const source = readFileSync(file, "utf8");
  const open = `// #region ${name}`;
  const close = `// #endregion ${name}`;
  const lines = source.split("\n");
  const start = lines.findIndex((line) => line.trim() === open);
  const end = lines.findIndex((line, index) => index > start && line.trim() === close);
  if (start < 0 || end < 0) throw new Error(`${String(file)} has no region "${name}" (${open} … ${close})`);
  const region = lines.slice(start + 1, end);
  const indent = /^ */.exec(region[0] ?? "")?.[0].length ?? 0;
  return region.map((line) => line.slice(Math.min(indent, /^ */.exec(line)?.[0].length ?? 0))).join("\n");
}

/** Whether the text of `readme` holds the region `name` of `file` ({@link exampleRegion}) verbatim. */
export function readmeShows(readme, file, name) {
  return readFileSync(readme, "utf8").includes(exampleRegion(file, name));
}
