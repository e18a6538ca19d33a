/**
 * What `createDashboard` takes, and the check that refuses unknown keys and bad values the way
 * core's options are checked (`INVALID_ARGUMENT`, before anything is served).
 *
 * @module
 */
import {
  type Broker,
  DEFAULT_STATUS_CAP,
  type Driver,
  InvalidArgumentError,
  type QueueRow,
  type TableDefinition,
} from "@rowclaim/core";
import { describeValue, unknownKey } from "@rowclaim/core/driver";
import type { DashboardAuth } from "./auth.js";

/** What a redaction callback is told about the payload it is given. */
export interface RedactionContext {
  /** The table the row belongs to. */
  readonly table: TableDefinition;
  /** The row, with its headers; its `payload` is the one given. */
  readonly row: QueueRow;
}

/**
 * How payloads are shown: `"show"` as they are (default), `"hide"` never (and the search does
 * not look into them), or a callback that returns what to show instead (a redacted copy, a
 * summary string; `undefined` hides it). The callback's result is shown as JSON.
 */
export type PayloadDisplay = "show" | "hide" | ((payload: unknown, context: RedactionContext) => unknown);

/** What `createDashboard` takes. */
export interface DashboardOptions {
  /** The broker whose driver the dashboard reads and acts through (pauses go through it). Or give `driver`. */
  readonly broker?: Broker;
  /** The driver, when there is no broker at hand (the dashboard makes a broker of its own on it, and never closes it). */
  readonly driver?: Driver;
  /** The tables shown, as `defineTable` returns them. At least one; names must differ. */
  readonly tables: readonly TableDefinition[];
  /**
   * Who may see and act. Without it every request is refused (403): the dashboard is closed
   * until it is told who may come in.
   */
  readonly auth?: DashboardAuth;
  /**
   * The path the handler is mounted under, for example `"/admin/queues"` (links and form
   * actions start with it; requests outside it answer 404). Default `""`: the root.
   */
  readonly basePath?: string;
  /** The secret CSRF tokens are signed with. Default: a random one per process (tokens end with it). */
  readonly secret?: string;
  /** How payloads are shown; see {@link PayloadDisplay}. Default `"show"`. */
  readonly payloads?: PayloadDisplay;
  /** How long counts are kept before they are read again, in milliseconds. Default 5000. */
  readonly countsTtlMs?: number;
  /** Each count stops at this many rows (“10000+”). Default core's `DEFAULT_STATUS_CAP`. */
  readonly countCap?: number;
  /** Rows per batch of a bulk action. Default 500. */
  readonly batchSize?: number;
  /** Rows per list page. Default 50. */
  readonly pageSize?: number;
  /** How often the page's script refreshes counts, in milliseconds. Default 2000. */
  readonly refreshMs?: number;
  /** The title in the page header. Default `"rowclaim"`. */
  readonly title?: string;
  /** Other origins (`https://admin.example.com`) whose state-changing requests are accepted, behind a proxy that rewrites the host. */
  readonly allowedOrigins?: readonly string[];
}

/** The options with their defaults, checked. */
export interface ResolvedOptions {
  readonly broker: Broker | undefined;
  readonly driver: Driver;
  readonly tables: readonly TableDefinition[];
  readonly auth: DashboardAuth | undefined;
  readonly basePath: string;
  readonly secret: string | undefined;
  readonly payloads: PayloadDisplay;
  readonly countsTtlMs: number;
  readonly countCap: number;
  readonly batchSize: number;
  readonly pageSize: number;
  readonly refreshMs: number;
  readonly title: string;
  readonly allowedOrigins: readonly string[];
}

const optionKeys: readonly string[] = Object.freeze([
  "broker",
  "driver",
  "tables",
  "auth",
  "basePath",
  "secret",
  "payloads",
  "countsTtlMs",
  "countCap",
  "batchSize",
  "pageSize",
  "refreshMs",
  "title",
  "allowedOrigins",
]);

function refuse(problem: string): never {
  throw new InvalidArgumentError(`createDashboard: ${problem}.`);
}

function whole(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
    refuse(`${name} must be a whole number from ${min} to ${max}, got ${describeValue(value)}`);
  return value;
}

/** Checks `options` and fills the defaults. @throws {InvalidArgumentError} on anything wrong. */
export function resolveOptions(options: DashboardOptions): ResolvedOptions {
  if (typeof options !== "object" || options === null)
    refuse(`options must be an object, got ${describeValue(options)}`);
  const unknown = unknownKey(options, optionKeys);
  if (unknown !== undefined) refuse(`unknown option \`${unknown.key}\`. ${unknown.advice}`);
  const { broker, driver } = options;
  if ((broker === undefined) === (driver === undefined)) refuse("give either broker or driver (one of them)");
  const used = broker?.driver ?? driver;
  if (used === undefined || typeof used !== "object") refuse("the driver is missing");
  if (!Array.isArray(options.tables) || options.tables.length === 0)
    refuse("tables must be a non-empty array of defineTable results");
  const names = new Set<string>();
  for (const table of options.tables) {
    if (typeof table !== "object" || table === null || !Array.isArray((table as TableDefinition).allColumns))
      refuse(`tables holds ${describeValue(table)}, not a defineTable result`);
    if (names.has(table.name)) refuse(`table ${table.name} is listed twice`);
    names.add(table.name);
  }
  const auth = options.auth;
  if (auth !== undefined) {
    if (typeof auth !== "object" || auth === null)
      refuse(`auth must be an object, got ${describeValue(auth)}`);
    if ("authorize" in auth) {
      if (typeof auth.authorize !== "function") refuse("auth.authorize must be a function");
    } else if ("basic" in auth) {
      if (!Array.isArray(auth.basic) || auth.basic.length === 0)
        refuse("auth.basic must be a non-empty array of users");
      for (const user of auth.basic) {
        if (typeof user?.username !== "string" || user.username === "" || user.username.includes(":"))
          refuse("every basic user needs a username (without a colon)");
        if (typeof user.password !== "string" || user.password === "")
          refuse(`user ${user.username} needs a password`);
        if (user.role !== undefined && user.role !== "admin" && user.role !== "read")
          refuse(`user ${user.username}: role must be "admin" or "read", got ${describeValue(user.role)}`);
      }
    } else refuse("auth takes { basic: [...] } or { authorize }");
  }
  const basePath = options.basePath ?? "";
  if (
    typeof basePath !== "string" ||
    (basePath !== "" && (!basePath.startsWith("/") || basePath.endsWith("/")))
  )
    refuse(`basePath must start with / and not end with one (or be ""), got ${describeValue(basePath)}`);
  if (options.secret !== undefined && (typeof options.secret !== "string" || options.secret.length < 16))
    refuse("secret must be a string of at least 16 characters");
  const payloads = options.payloads ?? "show";
  if (payloads !== "show" && payloads !== "hide" && typeof payloads !== "function")
    refuse(`payloads must be "show", "hide" or a function, got ${describeValue(payloads)}`);
  const title = options.title ?? "rowclaim";
  if (typeof title !== "string") refuse("title must be a string");
  const allowedOrigins = options.allowedOrigins ?? [];
  if (!Array.isArray(allowedOrigins) || allowedOrigins.some((origin) => typeof origin !== "string"))
    refuse("allowedOrigins must be an array of origins");
  return {
    broker,
    driver: used,
    tables: options.tables,
    auth,
    basePath,
    secret: options.secret,
    payloads,
    countsTtlMs: whole(options.countsTtlMs, "countsTtlMs", 5000, 0, 3_600_000),
    countCap: whole(options.countCap, "countCap", DEFAULT_STATUS_CAP, 1, Number.MAX_SAFE_INTEGER),
    batchSize: whole(options.batchSize, "batchSize", 500, 1, 10_000),
    pageSize: whole(options.pageSize, "pageSize", 50, 1, 1000),
    refreshMs: whole(options.refreshMs, "refreshMs", 2000, 250, 3_600_000),
    title,
    allowedOrigins,
  };
}
