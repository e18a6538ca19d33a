// Builds dist/ when it is missing or older than src/ (turbo builds first; a direct `vitest run`
// after an edit may not have). Used by the global setup, so it imports nothing from vitest.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const binPath = join(packageDir, "dist", "bin.js");

/** Builds dist/ when it is missing or older than a source file (turbo builds first; a direct vitest run may not have). */
export function ensureBuilt(): void {
  const srcNewest = newestMtime(join(packageDir, "src"));
  if (existsSync(binPath) && statSync(binPath).mtimeMs >= srcNewest) return;
  const require = createRequire(import.meta.url);
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.json"], {
    cwd: packageDir,
    stdio: "inherit",
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}
