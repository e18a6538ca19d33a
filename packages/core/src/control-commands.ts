/**
 * What the broker's `pause`, `resume` and `controlState` do, and the check of `subscribe()`'s
 * `rateLimit` option: core's one implementation over any driver's {@link ControlStore}.
 *
 * @module
 */
import { controlChanged, controlChangeKey, type RateLimitSettings } from "./claim-gate.js";
import type { ControlStore } from "./control-store.js";
import {
  type ControlState,
  controlTableKey,
  type PauseOptions,
  parseScope,
  type RateLimitOptions,
  type RateState,
  scopeText,
  TABLE_SCOPE,
  UnsupportedControlError,
} from "./controls.js";
import type { Driver } from "./driver.js";
import { InvalidArgumentError } from "./errors.js";
import { describeValue, unknownKey } from "./option-keys.js";
import type { TableDefinition } from "./table.js";

/** The keys `pause()` and `resume()` take. */
export const pauseOptionKeys = Object.freeze(["group"] as const satisfies readonly (keyof PauseOptions)[]);

/** The keys of `subscribe()`'s `rateLimit`. */
export const rateLimitOptionKeys = Object.freeze([
  "limit",
  "intervalMs",
  "per",
] as const satisfies readonly (keyof RateLimitOptions)[]);

/**
 * The driver's control store, or the refusal naming what was asked (`what`, for example
 * `pause(jobs)`).
 *
 * @throws {UnsupportedControlError} the driver offers no run-time controls.
 */
export function controlStoreOf(driver: Driver, table: TableDefinition, what: string): ControlStore {
  if (!driver.capabilities.controls || driver.controls === undefined) {
    throw new UnsupportedControlError(
      `${what}: the ${driver.name} driver keeps no run-time controls (capabilities.controls is false), so table "${table.name}" cannot be paused or rate-limited through it. Use a driver that offers them (PostgreSQL, MySQL/MariaDB, SQLite).`,
      { table: table.name },
    );
  }
  return driver.controls;
}

/**
 * Pauses (`paused: true`) or resumes one table or group: checks the options (nothing is written
 * when they are wrong), writes the control row, and tells this process's subscriptions at once.
 *
 * @throws {InvalidArgumentError} unknown option, a group that is not a string, or a group on a table without a group column.
 * @throws {UnsupportedControlError} the driver offers no run-time controls.
 */
export async function setPause(
  driver: Driver,
  table: TableDefinition,
  options: PauseOptions,
  paused: boolean,
): Promise<void> {
  const verb = paused ? "pause" : "resume";
  const fail = (problem: string): never => {
    throw new InvalidArgumentError(`${verb}(${table.name}): ${problem}`, { table: table.name });
  };
  if (typeof options !== "object" || options === null)
    fail(`the options must be an object { group }, not ${describeValue(options)}.`);
  const unknown = unknownKey(options, pauseOptionKeys);
  if (unknown !== undefined) fail(`unknown option \`${unknown.key}\`. ${unknown.advice}`);
  const group = options.group;
  if (group !== undefined) {
    if (typeof group !== "string") fail(`group must be a string, not ${describeValue(group)}.`);
    if (table.columns.group === undefined)
      fail(
        `group "${group}" is given but the table has no group column. Leave group out to ${verb} the table.`,
      );
  }
  const store = controlStoreOf(driver, table, `${verb}(${table.name})`);
  const tableKey = controlTableKey(table);
  const scope = group === undefined ? TABLE_SCOPE : { kind: "group" as const, group };
  await store.setPaused(tableKey, scopeText(scope), paused);
  controlChanged(controlChangeKey(driver.dialect, tableKey));
}

/**
 * Reads a table's pauses and rate counters. `now` is the host's clock (ms), against which a
 * counter's window is judged.
 *
 * @throws {UnsupportedControlError} the driver offers no run-time controls.
 */
export async function readControlState(
  driver: Driver,
  table: TableDefinition,
  now: number = Date.now(),
): Promise<ControlState> {
  const store = controlStoreOf(driver, table, `controlState(${table.name})`);
  const rows = await store.read(controlTableKey(table));
  let paused = false;
  const pausedGroups: string[] = [];
  const rates: RateState[] = [];
  for (const row of rows) {
    const scope = parseScope(row.scope);
    if (scope === undefined) continue;
    if (row.paused) {
      if (scope.kind === "table") paused = true;
      else if (scope.group !== null) pausedGroups.push(scope.group);
    }
    if (row.rateLimit === null || row.rateIntervalMs === null || row.rateWindow === null) continue;
    const current = Math.floor(now / row.rateIntervalMs) * row.rateIntervalMs;
    const used = row.rateWindow >= current ? row.rateCount : 0;
    const waitMs = used >= row.rateLimit ? Math.max(0, row.rateWindow + row.rateIntervalMs - now) : 0;
    rates.push({
      per: scope.kind,
      ...(scope.kind === "group" ? { group: scope.group } : {}),
      limit: row.rateLimit,
      intervalMs: row.rateIntervalMs,
      used,
      waitMs,
    });
  }
  pausedGroups.sort();
  return { table: table.name, paused, pausedGroups, rates };
}

/**
 * Checks `subscribe()`'s `rateLimit` and resolves its scope for a subscription of `group`;
 * `undefined` when it is absent. `fail` throws the subscription's `DeclarationError`.
 */
export function checkRateLimit(
  value: RateLimitOptions | undefined,
  table: TableDefinition,
  group: string | null,
  fail: (problem: string, fix: string) => never,
): RateLimitSettings | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null)
    fail(
      `rateLimit must be an object, got ${describeValue(value)}`,
      'Pass { limit, intervalMs } (and per: "group" to count each group apart).',
    );
  const unknown = unknownKey(value, rateLimitOptionKeys);
  if (unknown !== undefined) fail(`unknown option \`rateLimit.${unknown.key}\``, unknown.advice);
  for (const name of ["limit", "intervalMs"] as const) {
    const given = value[name];
    if (typeof given !== "number" || !Number.isSafeInteger(given) || given < 1)
      fail(
        `rateLimit.${name} must be a whole number of at least 1, got ${describeValue(given)}`,
        name === "limit"
          ? "Set the most rows claimed per window."
          : "Set the window's length in milliseconds.",
      );
  }
  const per: unknown = value.per ?? "table";
  if (per === "key")
    fail(
      'rateLimit.per "key" is not offered: a claim would have to count every advisory key it takes',
      'Give each key its own group and use per: "group", or limit the whole table.',
    );
  if (per !== "table" && per !== "group")
    fail(
      `rateLimit.per must be "table" or "group", got ${describeValue(per)}`,
      'Use per: "table" or per: "group".',
    );
  if (per === "group" && table.columns.group === undefined)
    fail(
      'rateLimit.per is "group" but the table has no group column',
      'Name columns.group, or use per: "table".',
    );
  return {
    limit: value.limit,
    intervalMs: value.intervalMs,
    scope: per === "table" ? TABLE_SCOPE : { kind: "group", group },
  };
}
