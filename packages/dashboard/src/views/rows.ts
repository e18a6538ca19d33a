/**
 * A table's page: its counts and groups, the rows of one state with search, and the actions on
 * chosen rows or on everything the filter matches.
 *
 * @module
 */
import {
  formatCount,
  type QueueRow,
  type QueueStatus,
  type RowPage,
  type TableDefinition,
} from "@rowclaim/core";
import type { ThroughputPoint } from "../counts-cache.js";
import { html, type SafeHtml } from "../html.js";
import {
  ACTION_LABELS,
  ACTION_STATES,
  type ListQuery,
  ROW_ACTIONS,
  STATE_LABELS,
  statesOf,
} from "../model.js";
import type { PauseState } from "../source.js";
import { throughputChart } from "./chart.js";
import { countCell, scopedCount } from "./counts.js";
import { groupLabel, groupRows, pauseButton, pausedBadge } from "./groups.js";
import { canAct, csrfField, layout, type PageContext } from "./layout.js";

/** What the table page shows. */
export interface TablePageData {
  readonly table: TableDefinition;
  readonly status: QueueStatus;
  readonly pause: PauseState;
  readonly throughput: readonly ThroughputPoint[];
  readonly query: ListQuery;
  readonly page: RowPage;
  /** The payload of each row as a short line, after redaction. */
  readonly preview: (row: QueueRow) => string;
  /** Whether the search looks into payloads (off when payloads are hidden). */
  readonly textSearch: boolean;
  /** The message of a failure to list rows, shown instead of them. */
  readonly listError: string | undefined;
  readonly refreshMs: number;
}

/** The path of a table's list with `query` (and a cursor). */
export function listPath(base: string, table: string, query: ListQuery, after?: string): string {
  const params = new URLSearchParams({ state: query.state });
  if (query.group !== undefined) {
    params.set("group", query.group ?? "");
    if (query.group === null) params.set("nogroup", "1");
  }
  if (query.search !== undefined) params.set("q", query.search);
  if (query.inPayloads === true) params.set("in", "payload");
  if (after !== undefined) params.set("after", after);
  return `${base}/tables/${encodeURIComponent(table)}?${params.toString()}`;
}

/** The path of a row's page. */
export function rowPath(base: string, table: string, id: string, dead: boolean): string {
  return `${base}/tables/${encodeURIComponent(table)}/rows/${encodeURIComponent(id)}${dead ? "?dead=1" : ""}`;
}

/** Hidden fields that carry a list's query through a form. */
export function queryFields(query: ListQuery): SafeHtml {
  return html`<input type="hidden" name="state" value="${query.state}">
${query.group === undefined ? "" : html`<input type="hidden" name="group" value="${query.group ?? ""}">`}
${query.group === null ? html`<input type="hidden" name="nogroup" value="1">` : ""}
${query.search === undefined ? "" : html`<input type="hidden" name="q" value="${query.search}">`}
${query.inPayloads === true ? html`<input type="hidden" name="in" value="payload">` : ""}`;
}

/** The table page. */
export function tablePage(context: PageContext, data: TablePageData): SafeHtml {
  const { table, status, query } = data;
  const name = table.name;
  const scope = query.group === undefined ? true : query.group;
  const states = statesOf(table);
  const actions = ROW_ACTIONS.filter((action) => ACTION_STATES[action].includes(query.state)).filter(
    (action) => action !== "retry" || table.columns.runAt !== undefined,
  );
  const matching = scopedCount(status, scope, query.state);
  const body = html`<div data-counts-url="${context.base}/tables/${encodeURIComponent(name)}/counts.json" data-refresh-ms="${data.refreshMs}">
<h1>${name} <span class="badge">${table.form}</span> ${pausedBadge(name, true, data.pause.table)}
${data.pause.supported ? pauseButton(context, name, undefined, data.pause.table) : ""}</h1>
<div class="cards">
${states.map(
  (
    state,
  ) => html`<div class="card ${state}"><div class="label">${STATE_LABELS[state]}${query.group === undefined ? "" : html` · ${groupLabel(query.group)}`}</div>
<div class="value">${countCell(name, scope, state, scopedCount(status, scope, state))}</div></div>`,
)}
</div>
<section class="panel"><h2>Throughput</h2><div class="chart">${throughputChart(data.throughput)}</div></section>
<section class="panel"><h2>Groups</h2>${groupRows(context, name, status, data.pause)}</section>
<section class="panel">
<nav class="tabs">${states.map(
    (state) =>
      html`<a href="${listPath(context.base, name, { ...query, state })}"${state === query.state ? html` class="current"` : ""}>${STATE_LABELS[state]}<span class="count muted">${countCell(name, scope, state, scopedCount(status, scope, state))}</span></a>`,
  )}</nav>
<form class="toolbar" method="get" action="${context.base}/tables/${encodeURIComponent(name)}" role="search">
<input type="hidden" name="state" value="${query.state}">
${
  table.columns.group === undefined
    ? ""
    : html`<select name="group" aria-label="group"><option value="">every group</option>
${status.groups
  .filter((group) => group.group !== null)
  .map(
    (group) =>
      html`<option value="${group.group ?? ""}"${group.group === query.group ? html` selected` : ""}>${group.group ?? ""}</option>`,
  )}</select>`
}
<input type="search" name="q" value="${query.search ?? ""}" placeholder="${data.textSearch ? "id, key or payload text" : "id or key"}" aria-label="search">
<button type="submit">Search</button>
${query.search === undefined ? "" : html`<a href="${listPath(context.base, name, { ...query, search: undefined, inPayloads: false })}">clear</a>`}
${query.search === undefined || query.inPayloads === true || !data.textSearch ? "" : html`<a href="${listPath(context.base, name, { ...query, inPayloads: true })}">search the payloads too</a>`}
</form>
${data.listError === undefined ? rowsForm(context, data, actions, matching.capped ? `${formatCount(matching)}` : String(matching.count)) : html`<div class="flash error">${data.listError}</div>`}
</section>
</div>`;
  return layout(context, name, body);
}

function rowsForm(
  context: PageContext,
  data: TablePageData,
  actions: readonly (typeof ROW_ACTIONS)[number][],
  matching: string,
): SafeHtml {
  const { table, query, page } = data;
  const name = table.name;
  const dead = query.state === "dead";
  const act = canAct(context) && actions.length > 0;
  if (page.rows.length === 0)
    return html`<p class="empty">No ${STATE_LABELS[query.state].toLowerCase()} rows${query.search === undefined ? "" : html` match “${query.search}”`}.</p>`;
  const last = page.next === undefined ? undefined : String(page.next);
  return html`<form method="post" action="${context.base}/tables/${encodeURIComponent(name)}/actions">
${csrfField(context)}${queryFields(query)}
${
  act
    ? html`<div class="toolbar">
${actions.map(
  (action) =>
    html`<button type="submit" name="do" value="${action}:selected"${action === "delete" || action === "cancel" ? html` class="danger" data-confirm="${ACTION_LABELS[action]} the selected rows?"` : ""}>${ACTION_LABELS[action]} selected</button>`,
)}
<span class="grow"></span>
${actions.map(
  (action) =>
    html`<button type="submit" name="do" value="${action}:matching" data-confirm="${ACTION_LABELS[action]} every ${STATE_LABELS[query.state].toLowerCase()} row${query.search === undefined ? "" : " that matches the search"}${query.group === undefined ? "" : ` of ${groupLabel(query.group)}`}?"${action === "delete" || action === "cancel" ? html` class="danger"` : ""}>${ACTION_LABELS[action]} all ${query.search === undefined ? matching : "matching"}</button>`,
)}
</div>`
    : ""
}
<table class="grid rows">
<thead><tr>${act ? html`<th><input type="checkbox" data-select-all aria-label="select all"></th>` : ""}<th>Id</th><th>Group</th><th class="num">Attempt</th><th>Run at</th><th>Key</th><th>Payload</th></tr></thead>
<tbody>
${page.rows.map((row) => {
  const id = String(row.id);
  return html`<tr>${act ? html`<td><input type="checkbox" name="id" value="${id}" aria-label="select ${id}"></td>` : ""}
<td class="mono"><a href="${rowPath(context.base, name, id, dead)}">${id}</a></td>
<td>${groupLabel(row.group)}</td><td class="num">${row.attempt}</td>
<td>${row.runAt === null ? "—" : row.runAt.toISOString()}</td><td class="mono">${row.key ?? (row.holder?.kind === "advisoryKey" ? row.holder.key : "")}</td>
<td class="preview mono">${data.preview(row)}</td></tr>`;
})}
</tbody></table>
<div class="pager">${last === undefined ? "" : html`<a href="${listPath(context.base, name, query, last)}">Next page →</a>`}</div>
</form>`;
}
