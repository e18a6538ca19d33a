/**
 * Per-key concurrency limits of the advisory lock form: `advisoryLock: { key, limit }` lets up to
 * `limit` rows of one rendered key be in work at once, across every process on the database.
 * The key gets `limit` lock slots, each a lock of its own on the rendered key with the slot's
 * number after it ({@link advisorySlotKey}: `accounts-7#1`, `accounts-7#2`, …); a take tries the
 * slots in order, each without waiting, and holds the first it gets. With several rows of a key
 * in work, the key's lock no longer keeps one row from being taken twice, so a take first locks
 * the row itself ({@link advisoryRowKey}: `accounts-7#row:42`), without waiting too. A limit of 1
 * (the default, and a plain string `advisoryLock`) locks the rendered key itself and nothing
 * else, as before limits existed.
 *
 * @module
 */
import { describeValue, unknownKey } from "./option-keys.js";

/**
 * The object form of `advisoryLock`: the key template and how many rows of one rendered key may
 * be in work at once.
 *
 * @example
 * // At most 3 jobs of one account in work, across all processes:
 * defineTable({ name: "jobs", columns, extraColumns: ["account"], advisoryLock: { key: "jobs-{account}", limit: 3 } });
 */
export interface AdvisoryLockOptions {
  /** The key template, as the string form of `advisoryLock` takes it: `"accounts-{account}"`. */
  readonly key: string;
  /**
   * How many rows of one rendered key may be in work at once: a whole number from 1 to
   * {@link MAX_ADVISORY_LIMIT}. Default 1. Each claimed row tries up to `limit` locks (one
   * statement) and holds one, with one connection, while it is in work.
   */
  readonly limit?: number;
}

/**
 * The largest per-key limit: a take tries every slot of its key in one statement, so the limit
 * bounds that statement's size and the locks a full key makes each claim try.
 */
export const MAX_ADVISORY_LIMIT = 64;

/** What sits between a rendered key and its slot number in a slot's lock key. */
export const ADVISORY_SLOT_SEPARATOR = "#";

/** The keys of {@link AdvisoryLockOptions}. */
const advisoryLockOptionKeys: readonly string[] = Object.freeze(["key", "limit"]);

/**
 * The lock key of slot `slot` (1 to `limit`) of a rendered key, for a table whose limit is
 * `limit`: the rendered key itself when `limit` is 1, else the key, `#` and the slot's number
 * (`accounts-7#2`). Every driver locks (or hashes, or names) exactly this text.
 */
export function advisorySlotKey(key: string, slot: number, limit: number): string {
  return limit === 1 ? key : `${key}${ADVISORY_SLOT_SEPARATOR}${slot}`;
}

/**
 * The lock key of one row of a key whose limit is above 1: the rendered key, `#row:` and the
 * row's id as text (`accounts-7#row:42`). A take holds it beside its slot, so that a row in work
 * is never taken again under another slot of its key.
 */
export function advisoryRowKey(key: string, id: string | number | bigint): string {
  return `${key}${ADVISORY_SLOT_SEPARATOR}row:${String(id)}`;
}

/** Every slot's lock key of a rendered key, slot 1 first ({@link advisorySlotKey}). */
export function advisorySlotKeys(key: string, limit: number): readonly string[] {
  return Array.from({ length: limit }, (_, index) => advisorySlotKey(key, index + 1, limit));
}

/**
 * The slots of `key` that `isHeld` says nobody holds, slot 1 first: what a claim whose locks
 * live in the process (SQLite, the memory driver) may still take for that key.
 */
export function freeAdvisorySlots(
  key: string,
  limit: number,
  isHeld: (slotKey: string) => boolean,
): string[] {
  return advisorySlotKeys(key, limit).filter((slotKey) => !isHeld(slotKey));
}

/**
 * Splits an `advisoryLock` value (a template string, or {@link AdvisoryLockOptions}) into its
 * template and its limit, refusing unknown keys and a limit that is not a whole number from 1 to
 * {@link MAX_ADVISORY_LIMIT}.
 *
 * @internal used by `defineTable`; `fail` throws the table's `DeclarationError`.
 */
export function splitAdvisoryLock(
  value: unknown,
  fail: (problem: string, fix: string) => never,
): { readonly template: unknown; readonly limit: number } {
  if (typeof value !== "object" || value === null) return { template: value, limit: 1 };
  const unknown = unknownKey(value, advisoryLockOptionKeys);
  if (unknown !== undefined) fail(`\`advisoryLock.${unknown.key}\` is not an option`, unknown.advice);
  const { key, limit = 1 } = value as { key?: unknown; limit?: unknown };
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_ADVISORY_LIMIT) {
    fail(
      `\`advisoryLock.limit\` must be a whole number from 1 to ${MAX_ADVISORY_LIMIT}, got ${describeValue(limit)}`,
      "Set limit to how many rows of one key may be in work at once (1: one at a time).",
    );
  }
  return { template: key, limit };
}
