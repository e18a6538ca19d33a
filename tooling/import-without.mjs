// Runs Node with some packages unresolvable, as if they were not installed: the test that an entry
// point (a driver's `/sql` subpath, the command line for one database) loads none of them.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The `--import` module that hides the packages named in ROWCLAIM_HIDE_PACKAGES (comma-separated). */
export const hidePackagesModule = fileURLToPath(new URL("./hide-packages.mjs", import.meta.url));

/**
 * @param {readonly string[]} hidden packages that cannot be resolved
 * @returns {Record<string, string>} the environment of a child run with `--import hidePackagesModule`
 */
export function hidingEnv(hidden) {
  return { ...process.env, ROWCLAIM_HIDE_PACKAGES: hidden.join(",") };
}

/**
 * @param {string} cwd the directory the specifier resolves from (a package's own folder, for a
 *   self-reference such as `@rowclaim/sqlite/sql`)
 * @param {string} specifier what to import
 * @param {readonly string[]} hidden packages that cannot be resolved
 * @returns {Promise<{ ok: true; exports: string[] } | { ok: false; error: string }>}
 */
export function importWithout(cwd, specifier, hidden) {
  const script = `import(${JSON.stringify(specifier)}).then(
  (loaded) => console.log(JSON.stringify({ ok: true, exports: Object.keys(loaded).sort() })),
  (error) => console.log(JSON.stringify({ ok: false, error: String(error?.code ?? error) })),
);`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", hidePackagesModule, "--input-type=module", "--eval", script],
      { cwd, timeout: 60_000, env: hidingEnv(hidden) },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`the child failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}"));
      },
    );
  });
}
