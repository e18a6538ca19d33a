// The import-cycle check CI runs (tooling/import-cycles.mjs), tried on small packages written to
// a temporary folder: it must find a planted cycle, type-only imports included, and pass a
// package without one.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findCycles, importSpecifiers } from "../import-cycles.mjs";

const folders = [];

afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Writes packages (name → { manifest, files }) under a new folder and returns it. */
function workspace(packages) {
  const root = mkdtempSync(join(tmpdir(), "rowclaim-cycles-"));
  folders.push(root);
  for (const [dir, { manifest, files }] of Object.entries(packages)) {
    mkdirSync(join(root, dir, "src"), { recursive: true });
    writeFileSync(join(root, dir, "package.json"), JSON.stringify(manifest));
    for (const [file, text] of Object.entries(files)) writeFileSync(join(root, dir, "src", file), text);
  }
  return root;
}

describe("the import-cycle check", () => {
  it("reads static imports, type imports and re-exports, not dynamic imports", () => {
    const text = [
      'import { a } from "./a.js";',
      'import type { B } from "./b.js";',
      'export { c } from "./c.js";',
      'export type { D } from "./d.js";',
      'import "./side-effect.js";',
      'const lazy = () => import("./lazy.js");',
    ].join("\n");
    expect(importSpecifiers(text)).toEqual(["./a.js", "./b.js", "./c.js", "./d.js", "./side-effect.js"]);
  });

  it("finds a cycle made of a type-only import", () => {
    const root = workspace({
      one: {
        manifest: { name: "@rowclaim/one" },
        files: {
          "a.ts": 'import type { B } from "./b.js";\nexport type A = B[];\n',
          "b.ts": 'import { helper } from "./a.js";\nexport type B = string;\n',
        },
      },
    });
    const found = findCycles(root);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^modules: one\/src\/a\.ts → one\/src\/b\.ts → one\/src\/a\.ts$/);
  });

  it("finds a cycle between packages", () => {
    const root = workspace({
      one: {
        manifest: { name: "@rowclaim/one", dependencies: { "@rowclaim/two": "workspace:*" } },
        files: {},
      },
      two: {
        manifest: { name: "@rowclaim/two", devDependencies: { "@rowclaim/one": "workspace:*" } },
        files: {},
      },
    });
    expect(findCycles(root)).toEqual(["packages: @rowclaim/one → @rowclaim/two → @rowclaim/one"]);
  });

  it("passes modules that import in one direction only, through index files too", () => {
    const root = workspace({
      one: {
        manifest: { name: "@rowclaim/one" },
        files: {
          "index.ts": 'export { a } from "./a.js";\nexport type { B } from "./b.js";\n',
          "a.ts":
            'import type { B } from "./b.js";\nexport const a: B = "a";\nconst later = () => import("./index.js");\n',
          "b.ts": "export type B = string;\n",
        },
      },
    });
    expect(findCycles(root)).toEqual([]);
  });
});
