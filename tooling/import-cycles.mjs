#!/usr/bin/env node
// Refuses import cycles. Two graphs are checked:
// - within each package, the modules of `src/` linked by their static imports and re-exports,
//   type-only ones included (`import type`, `export type … from`); a dynamic `import()` is lazy
//   and does not count;
// - between the workspace packages, linked by the `@rowclaim/*` names in their package.json
//   dependencies, devDependencies and peerDependencies.
// Usage: node tooling/import-cycles.mjs [packages-dir]  — prints each cycle and exits 1, or
// prints "no import cycle" and exits 0.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Static import and re-export specifiers of one module's text (comments are not stripped: a
 * commented-out import is rare, and a false cycle is caught by reading it). */
export function importSpecifiers(text) {
  const found = [];
  const statement =
    /(?:^|[\n;])\s*(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"']+)["']/g;
  for (const match of text.matchAll(statement)) found.push(match[1]);
  return found;
}

function sourceFiles(dir) {
  const files = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (/\.(m|c)?tsx?$/.test(entry) && !entry.endsWith(".d.ts")) files.push(path);
  }
  return files;
}

function resolveRelative(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(m|c)?js$/, "");
  const candidates = [
    `${stem}.ts`,
    `${stem}.mts`,
    `${stem}.cts`,
    `${stem}.tsx`,
    join(base, "index.ts"),
    base,
  ];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
}

/** Cycles of a graph (Map node → nodes), as arrays of nodes, by Tarjan's strongly connected components. */
export function cycles(graph) {
  let index = 0;
  const order = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (node) => {
    order.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), order.get(next)));
      }
    }
    if (low.get(node) === order.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = (graph.get(node) ?? []).includes(node);
      if (component.length > 1 || selfLoop) found.push(component.reverse());
    }
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return found;
}

/** The module graph of one package's `src/`. */
export function moduleGraph(srcDir) {
  const graph = new Map();
  for (const file of sourceFiles(srcDir)) {
    const targets = [];
    for (const specifier of importSpecifiers(readFileSync(file, "utf8"))) {
      if (!specifier.startsWith(".")) continue;
      const target = resolveRelative(file, specifier);
      if (target !== undefined) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The graph of workspace packages by their `@rowclaim/*` dependencies. */
export function packageGraph(packagesDir) {
  const graph = new Map();
  for (const dir of readdirSync(packagesDir)) {
    const manifestPath = join(packagesDir, dir, "package.json");
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    const names = Object.keys({
      ...manifest.dependencies,
      ...manifest.devDependencies,
      ...manifest.peerDependencies,
    }).filter((name) => name.startsWith("@rowclaim/") && name !== manifest.name);
    graph.set(manifest.name, names);
  }
  return graph;
}

/** Every cycle under `packagesDir`, as printable lines. */
export function findCycles(packagesDir) {
  const lines = [];
  for (const cycle of cycles(packageGraph(packagesDir)))
    lines.push(`packages: ${cycle.join(" → ")} → ${cycle[0]}`);
  for (const dir of readdirSync(packagesDir)) {
    const src = join(packagesDir, dir, "src");
    if (!existsSync(src)) continue;
    for (const cycle of cycles(moduleGraph(src))) {
      const names = cycle.map((file) => relative(packagesDir, file));
      lines.push(`modules: ${names.join(" → ")} → ${names[0]}`);
    }
  }
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const here = dirname(fileURLToPath(import.meta.url));
  const packagesDir = resolve(process.argv[2] ?? join(here, "..", "packages"));
  const found = findCycles(packagesDir);
  if (found.length === 0) {
    console.log("no import cycle");
  } else {
    for (const line of found) console.error(`import cycle: ${line}`);
    process.exit(1);
  }
}
