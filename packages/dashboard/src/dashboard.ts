/**
 * `createDashboard`: the dashboard as one Web-standard handler, `(request: Request) =>
 * Promise<Response>`, that Hono, Bun, Deno and service workers mount as it is (and `node:http`,
 * Express and Fastify through the adapters). Every request is authorized first; every POST is
 * checked for the admin role and a CSRF token; every page is server-rendered HTML with one
 * style sheet and one script served by the handler itself.
 *
 * @module
 */
import {
  BrokerError,
  createBroker,
  type QueueStatus,
  type RowId,
  type RowState,
  rowStates,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import { DASHBOARD_JS } from "./assets/script.js";
import { DASHBOARD_CSS } from "./assets/style.js";
import { type AuthResult, authorizeRequest, type DashboardUser } from "./auth.js";
import { BulkJobs } from "./bulk-jobs.js";
import { CountsCache } from "./counts-cache.js";
import { CSRF_FIELD, csrfProblem, csrfToken } from "./csrf.js";
import {
  ACTION_LABELS,
  type ListQuery,
  ROW_ACTIONS,
  type RowAction,
  STATE_LABELS,
  statesOf,
} from "./model.js";
import { type DashboardOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { headersText, previewText, shownPayload, valueText } from "./payload-display.js";
import { assetResponse, errorResponse, htmlResponse, jsonResponse, redirectResponse } from "./responses.js";
import { randomSecret } from "./secret.js";
import { describeFailure, idFromText, QueueSource } from "./source.js";
import { type CountScope, countKey } from "./views/counts.js";
import { groupLabel } from "./views/groups.js";
import { jobPage } from "./views/job.js";
import type { PageContext } from "./views/layout.js";
import { overviewPage } from "./views/overview.js";
import { rowPage } from "./views/row.js";
import { listPath, tablePage } from "./views/rows.js";

/** The dashboard: a Web-standard handler, with a way to wait for its bulk jobs. */
export interface Dashboard {
  /** Answers one request. Never rejects: failures are answered with an error page. */
  (request: Request): Promise<Response>;
  /** The path it is mounted under (`""` at the root). */
  readonly basePath: string;
  /** Resolves once every bulk job it started has finished. */
  settled(): Promise<void>;
}

/** The most ids one POST may name (a page's selection). */
export const MAX_SELECTED_IDS = 1000;

/** The largest form body a POST may send, in bytes. */
export const MAX_FORM_BYTES = 256 * 1024;

/**
 * Creates the dashboard over `options.tables`, reading and acting through core's functions on
 * the broker's (or driver's) database. Closed by default: without `auth` every request is
 * refused.
 *
 * @throws {InvalidArgumentError} on unknown or bad options (nothing is served).
 * @example
 * const dashboard = createDashboard({ broker, tables: [jobs], auth: { basic: [{ username: "ops", password, role: "admin" }] } });
 * Bun.serve({ fetch: dashboard });
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const resolved = resolveOptions(options);
  const broker = resolved.broker ?? createBroker({ driver: resolved.driver, logger: silentLogger });
  const source = new QueueSource(broker, resolved.tables, resolved.countCap);
  const counts = new CountsCache((name) => source.status(tableOf(source, name)), resolved.countsTtlMs);
  const jobs = new BulkJobs();
  const secret = resolved.secret ?? randomSecret();
  const app = new DashboardApp(resolved, source, counts, jobs, secret);
  const handler = async (request: Request): Promise<Response> => {
    try {
      return await app.handle(request);
    } catch (error) {
      return failureResponse(error);
    }
  };
  return Object.assign(handler, { basePath: resolved.basePath, settled: () => jobs.settled() });
}

function tableOf(source: QueueSource, name: string): TableDefinition {
  const table = source.table(name);
  if (table === undefined) throw new Error(`unknown table ${name}`);
  return table;
}

function failureResponse(error: unknown): Response {
  const code = BrokerError.is(error) ? error.code : undefined;
  const status =
    code === "INVALID_ARGUMENT"
      ? 400
      : code === "UNSUPPORTED_FORM" || code === "UNSUPPORTED_CONTROL"
        ? 501
        : 500;
  return errorResponse(
    status,
    status === 400 ? "Bad request" : status === 501 ? "Not supported" : "Failed",
    describeFailure(error),
  );
}

/** A request that passed authorization, with what every page needs. */
interface Visit {
  readonly request: Request;
  readonly url: URL;
  readonly user: DashboardUser;
  readonly context: PageContext;
}

class DashboardApp {
  readonly #options: ResolvedOptions;
  readonly #source: QueueSource;
  readonly #counts: CountsCache;
  readonly #jobs: BulkJobs;
  readonly #secret: string;

  constructor(
    options: ResolvedOptions,
    source: QueueSource,
    counts: CountsCache,
    jobs: BulkJobs,
    secret: string,
  ) {
    this.#options = options;
    this.#source = source;
    this.#counts = counts;
    this.#jobs = jobs;
    this.#secret = secret;
  }

  async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const base = this.#options.basePath;
    let path = url.pathname;
    if (base !== "") {
      if (path !== base && !path.startsWith(`${base}/`))
        return errorResponse(404, "Not found", "Nothing is mounted here.");
      path = path.slice(base.length);
    }
    if (path === "") return redirectResponse(`${base}/`);
    const auth: AuthResult = await authorizeRequest(this.#options.auth, request);
    if (!auth.ok)
      return errorResponse(
        auth.status,
        auth.status === 401 ? "Unauthorized" : "Forbidden",
        auth.reason,
        auth.challenge === undefined ? {} : { "www-authenticate": auth.challenge },
      );
    const user = auth.user;
    const method = request.method.toUpperCase();
    const segments = path.split("/").slice(1).map(decodeSegment);
    if (segments.some((segment) => segment === undefined))
      return errorResponse(400, "Bad request", "The path is not valid.");
    const parts = segments as string[];
    if (method === "GET" || method === "HEAD") {
      if (parts[0] === "assets" && parts.length === 2) return this.#asset(parts[1] ?? "");
      const visit: Visit = { request, url, user, context: await this.#context(user, url) };
      return this.#get(visit, parts);
    }
    if (method !== "POST")
      return errorResponse(405, "Method not allowed", `${method} is not answered here.`, {
        allow: "GET, HEAD, POST",
      });
    if (user.role !== "admin")
      return errorResponse(403, "Forbidden", `${user.name} has the read-only role: it cannot act.`);
    const form = await readForm(request);
    if (form === undefined)
      return errorResponse(400, "Bad request", "The form could not be read (too large, or not a form).");
    const problem = await csrfProblem(
      request,
      form.get(CSRF_FIELD) ?? request.headers.get("x-csrf-token") ?? undefined,
      this.#secret,
      user,
      this.#options.allowedOrigins,
    );
    if (problem !== undefined)
      return errorResponse(403, "Forbidden", `Refused: ${problem}. Reload the page and try again.`);
    const visit: Visit = { request, url, user, context: await this.#context(user, url) };
    return this.#post(visit, parts, form);
  }

  async #context(user: DashboardUser, url: URL): Promise<PageContext> {
    return {
      base: this.#options.basePath,
      user,
      csrf: await csrfToken(this.#secret, user),
      title: this.#options.title,
      tables: this.#source.tables.map((table) => table.name),
      flash: noticeOf(url.searchParams),
    };
  }

  #asset(name: string): Response {
    if (name === "dashboard.css") return assetResponse(DASHBOARD_CSS, "text/css; charset=utf-8");
    if (name === "dashboard.js") return assetResponse(DASHBOARD_JS, "text/javascript; charset=utf-8");
    return errorResponse(404, "Not found", "No such file.");
  }

  async #get(visit: Visit, parts: readonly string[]): Promise<Response> {
    const [first, name, third, fourth] = parts;
    if (parts.length === 1 && first === "") return this.#overview(visit);
    if (parts.length === 1 && first === "counts.json") return this.#countsJson(this.#source.tables);
    if (first === "tables" && name !== undefined) {
      const table = this.#source.table(name);
      if (table === undefined)
        return errorResponse(404, "Not found", `There is no table ${name} on this dashboard.`);
      if (parts.length === 2) return this.#tablePage(visit, table);
      if (parts.length === 3 && third === "counts.json") return this.#countsJson([table]);
      if (parts.length === 4 && third === "rows" && fourth !== undefined)
        return this.#rowPage(visit, table, fourth);
    }
    if (first === "jobs" && name !== undefined) {
      const job = this.#jobs.get(name);
      if (job === undefined)
        return errorResponse(404, "Not found", "No such job (finished jobs are forgotten after 30 minutes).");
      if (parts.length === 2) return htmlResponse(jobPage(visit.context, job));
      if (parts.length === 3 && third === "progress.json")
        return jsonResponse({
          done: job.done,
          batches: job.batches,
          total: job.total,
          finished: job.finished,
          error: job.error ?? null,
        });
    }
    return errorResponse(404, "Not found", "No such page.");
  }

  async #overview(visit: Visit): Promise<Response> {
    const tables = await Promise.all(
      this.#source.tables.map(async (table) => ({
        name: table.name,
        status: (await this.#counts.get(table.name)).status,
        pause: await this.#source.pauseState(table),
        throughput: this.#counts.throughput(table.name),
      })),
    );
    return htmlResponse(overviewPage(visit.context, tables, this.#options.refreshMs));
  }

  async #countsJson(tables: readonly TableDefinition[]): Promise<Response> {
    const values: Record<string, string> = {};
    const paused: Record<string, boolean> = {};
    let readAt: Date | undefined;
    for (const table of tables) {
      const { status } = await this.#counts.get(table.name);
      const pause = await this.#source.pauseState(table);
      readAt = status.at;
      const scopes: CountScope[] = [true, ...status.groups.map((group) => group.group)];
      for (const scope of scopes) {
        for (const state of rowStates)
          values[countKey(table.name, scope, state)] = countText(status, scope, state);
        paused[countKey(table.name, scope, "due")] =
          pause.table || (scope !== true && pause.groups.has(scope));
      }
    }
    return jsonResponse({ values, paused, readAt: readAt?.toISOString() ?? null });
  }

  async #tablePage(visit: Visit, table: TableDefinition): Promise<Response> {
    const query = listQueryOf(table, visit.url.searchParams);
    const afterText = visit.url.searchParams.get("after");
    const textSearch = this.#options.payloads !== "hide";
    const [{ status }, pause] = await Promise.all([
      this.#counts.get(table.name),
      this.#source.pauseState(table),
    ]);
    let page = { rows: [], next: undefined } as Awaited<ReturnType<QueueSource["list"]>>;
    let listError: string | undefined;
    try {
      page = await this.#source.list(
        table,
        query,
        afterText === null || afterText === "" ? undefined : idFromText(afterText),
        this.#options.pageSize,
        textSearch,
      );
    } catch (error) {
      listError = describeFailure(error);
    }
    return htmlResponse(
      tablePage(visit.context, {
        table,
        status,
        pause,
        throughput: this.#counts.throughput(table.name),
        query,
        page,
        preview: (row) => previewText(this.#options.payloads, table, row),
        textSearch,
        listError,
        refreshMs: this.#options.refreshMs,
      }),
    );
  }

  async #rowPage(visit: Visit, table: TableDefinition, idText: string): Promise<Response> {
    const dead = visit.url.searchParams.get("dead") === "1";
    const row = await this.#source.detail(table, idFromText(idText), dead);
    if (row === undefined)
      return errorResponse(
        404,
        "Not found",
        `Table ${table.name} has no row ${idText} (it may have been processed or removed).`,
      );
    const payload = valueText(shownPayload(this.#options.payloads, table, row), true);
    return htmlResponse(
      rowPage(visit.context, table, row, payload, headersText(this.#options.payloads, row)),
    );
  }

  async #post(visit: Visit, parts: readonly string[], form: URLSearchParams): Promise<Response> {
    const [first, name, action] = parts;
    const table = first === "tables" && name !== undefined ? this.#source.table(name) : undefined;
    if (table === undefined || parts.length !== 3) return errorResponse(404, "Not found", "No such action.");
    if (action === "pause" || action === "resume") return this.#pause(visit, table, form, action === "pause");
    if (action === "actions") return this.#act(visit, table, form);
    return errorResponse(404, "Not found", "No such action.");
  }

  async #pause(
    _visit: Visit,
    table: TableDefinition,
    form: URLSearchParams,
    paused: boolean,
  ): Promise<Response> {
    const group = form.get("group");
    await this.#source.setPaused(table, group === null || group === "" ? undefined : group, paused);
    this.#counts.invalidate(table.name);
    const back =
      form.get("back") === "overview"
        ? `${this.#options.basePath}/`
        : listPath(this.#options.basePath, table.name, listQueryOf(table, form));
    return redirectResponse(
      withNotice(back, {
        notice: paused ? "paused" : "resumed",
        what: group === null || group === "" ? "" : group,
      }),
    );
  }

  async #act(visit: Visit, table: TableDefinition, form: URLSearchParams): Promise<Response> {
    const [actionText, scope] = (form.get("do") ?? "").split(":");
    const action = ROW_ACTIONS.find((candidate) => candidate === actionText);
    if (action === undefined || (scope !== "selected" && scope !== "matching"))
      return errorResponse(
        400,
        "Bad request",
        "The form names no action (do=retry|cancel|delete|redrive:selected|matching).",
      );
    const query = listQueryOf(table, form);
    const back = listPath(this.#options.basePath, table.name, query);
    if (scope === "selected") {
      const ids = form.getAll("id").filter((id) => id !== "");
      if (ids.length === 0) return redirectResponse(withNotice(back, { notice: "none" }));
      if (ids.length > MAX_SELECTED_IDS)
        return errorResponse(
          400,
          "Bad request",
          `At most ${MAX_SELECTED_IDS} rows at a time; use “all matching” for more.`,
        );
      const outcome = await this.#source.act(
        table,
        action,
        ids.map(idFromText),
        query.state,
        this.#options.batchSize,
      );
      this.#counts.invalidate(table.name);
      return redirectResponse(
        withNotice(back, {
          notice: action,
          changed: String(outcome.changed),
          inwork: String(outcome.inWork),
          missing: String(outcome.missing),
        }),
      );
    }
    const job = this.#startBulk(visit, table, action, query, back);
    return redirectResponse(`${this.#options.basePath}/jobs/${encodeURIComponent(job)}`);
  }

  #startBulk(
    visit: Visit,
    table: TableDefinition,
    action: RowAction,
    query: ListQuery,
    back: string,
  ): string {
    const { batchSize } = this.#options;
    const textSearch = this.#options.payloads !== "hide";
    const description = `${ACTION_LABELS[action]}: ${STATE_LABELS[query.state].toLowerCase()} rows of ${table.name}${query.group === undefined ? "" : ` · ${groupLabel(query.group)}`}${query.search === undefined ? "" : ` matching “${query.search}”`}`;
    const cached = this.#counts.peek(table.name);
    const total =
      cached === undefined || query.search !== undefined
        ? null
        : countNumber(cached, query.group === undefined ? true : query.group, query.state);
    const what = { table: table.name, action, description, user: visit.user.name, back, total };
    const onEnd = () => this.#counts.invalidate(table.name);
    if (action === "redrive" && query.group === undefined) {
      // Core's redrive batches and reports progress itself (a filter by payload text, or all).
      const search = textSearch ? query.search : undefined;
      const job = this.#jobs.start<true>(
        what,
        async (_cursor, report) => ({
          changed: await this.#source.redriveAll(table, search, batchSize, report),
          next: undefined,
        }),
        onEnd,
      );
      return job.id;
    }
    const job = this.#jobs.start<RowId>(
      what,
      async (after) => this.#source.actBatch(table, action, query, after, batchSize, textSearch),
      onEnd,
    );
    return job.id;
  }
}

function countNumber(status: QueueStatus, scope: CountScope, state: RowState): number {
  let total = 0;
  for (const group of status.groups) if (scope === true || group.group === scope) total += group[state].count;
  return total;
}

function countText(status: QueueStatus, scope: CountScope, state: RowState): string {
  let total = 0;
  let capped = false;
  for (const group of status.groups) {
    if (scope !== true && group.group !== scope) continue;
    total += group[state].count;
    capped ||= group[state].capped;
  }
  return capped ? `${total}+` : String(total);
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The list a query string (or a form) asks for: state (default due), group, search. */
export function listQueryOf(table: TableDefinition, params: URLSearchParams): ListQuery {
  const states = statesOf(table);
  const stateText = params.get("state");
  const state = states.find((candidate) => candidate === stateText) ?? "due";
  const groupText = params.get("group");
  const group =
    table.columns.group === undefined
      ? undefined
      : params.get("nogroup") === "1"
        ? null
        : groupText === null || groupText === ""
          ? undefined
          : groupText;
  const q = params.get("q")?.trim();
  return {
    state,
    group,
    search: q === undefined || q === "" ? undefined : q.slice(0, 500),
    inPayloads: params.get("in") === "payload",
  };
}

async function readForm(request: Request): Promise<URLSearchParams | undefined> {
  const length = Number(request.headers.get("content-length") ?? "0");
  if (length > MAX_FORM_BYTES) return undefined;
  const type = request.headers.get("content-type") ?? "";
  if (type !== "" && !type.startsWith("application/x-www-form-urlencoded")) return undefined;
  const text = await request.text();
  if (text.length > MAX_FORM_BYTES) return undefined;
  return new URLSearchParams(text);
}

function withNotice(path: string, notice: Record<string, string>): string {
  const separator = path.includes("?") ? "&" : "?";
  return `${path}${separator}${new URLSearchParams(notice).toString()}`;
}

/** The message a redirect after an action asks for, built from fixed texts and numbers only. */
function noticeOf(params: URLSearchParams): PageContext["flash"] {
  const notice = params.get("notice");
  if (notice === null) return undefined;
  const number = (name: string) => {
    const value = Number.parseInt(params.get(name) ?? "0", 10);
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  };
  if (notice === "none") return { text: "No rows were selected.", error: true };
  if (notice === "paused" || notice === "resumed") {
    const what = params.get("what");
    return {
      text: `${what === null || what === "" ? "The table" : `Group ${what}`} is ${notice} (every process sees it within its poll interval).`,
      error: false,
    };
  }
  const action = ROW_ACTIONS.find((candidate) => candidate === notice);
  if (action === undefined) return undefined;
  const changed = number("changed");
  const inWork = number("inwork");
  const missing = number("missing");
  const parts = [`${ACTION_LABELS[action]}: ${changed} row${changed === 1 ? "" : "s"} changed`];
  if (inWork > 0) parts.push(`${inWork} left alone because in work`);
  if (missing > 0) parts.push(`${missing} not found in a state the action changes`);
  return { text: `${parts.join(", ")}.`, error: changed === 0 };
}
