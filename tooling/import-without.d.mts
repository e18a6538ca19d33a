/** What {@link importWithout} found: the module's export names, or the code of the error it threw. */
export type ImportResult = { ok: true; exports: string[] } | { ok: false; error: string };
/** The `--import` module that hides the packages named in ROWCLAIM_HIDE_PACKAGES (comma-separated). */
export declare const hidePackagesModule: string;
/** The environment of a child run with `--import hidePackagesModule` in which `hidden` cannot be resolved. */
export declare function hidingEnv(hidden: readonly string[]): Record<string, string>;
/** Imports `specifier` from `cwd` in a child Node process in which the `hidden` packages cannot be resolved. */
export declare function importWithout(
  cwd: string,
  specifier: string,
  hidden: readonly string[],
): Promise<ImportResult>;
