/**
 * A row's page: its payload (after redaction), headers, attempt, times and what holds it, with
 * the actions its state allows.
 *
 * @module
 */
import type { QueueRow, RowHolder, TableDefinition } from "@rowclaim/core";
import { html, type SafeHtml } from "../html.js";
import { ACTION_LABELS, ACTION_STATES, ROW_ACTIONS, STATE_LABELS } from "../model.js";
import { groupLabel } from "./groups.js";
import { canAct, csrfField, layout, type PageContext } from "./layout.js";
import { listPath, queryFields } from "./rows.js";

/** What holds a row in work, for people. */
export function describeHolder(holder: RowHolder | undefined): string {
  if (holder === undefined) return "—";
  switch (holder.kind) {
    case "lease":
      return `a lease until ${holder.until.toISOString()}`;
    case "rowLock":
      return holder.session === null ? "a row lock" : `a row lock held by session ${holder.session}`;
    case "advisoryKey":
      return `advisory key ${holder.key}${holder.session === null ? "" : ` held by session ${holder.session}`}`;
  }
}

/** The row page. `payload` and `headers` are what may be shown (after redaction). */
export function rowPage(
  context: PageContext,
  table: TableDefinition,
  row: QueueRow,
  payload: string,
  headers: string | undefined,
): SafeHtml {
  const id = String(row.id);
  const query = { state: row.state, group: undefined, search: undefined } as const;
  const actions = ROW_ACTIONS.filter((action) => ACTION_STATES[action].includes(row.state)).filter(
    (action) => action !== "retry" || table.columns.runAt !== undefined,
  );
  const time = (value: Date | null) => (value === null ? "—" : value.toISOString());
  const body = html`<p><a href="${listPath(context.base, table.name, query)}">← ${table.name} · ${STATE_LABELS[row.state]}</a></p>
<h1>Row <span class="mono">${id}</span> <span class="badge ${row.state}">${STATE_LABELS[row.state]}</span></h1>
${
  canAct(context) && actions.length > 0
    ? html`<form class="toolbar" method="post" action="${context.base}/tables/${encodeURIComponent(table.name)}/actions">
${csrfField(context)}${queryFields(query)}<input type="hidden" name="id" value="${id}">
${actions.map(
  (action) =>
    html`<button type="submit" name="do" value="${action}:selected"${action === "delete" || action === "cancel" ? html` class="danger" data-confirm="${ACTION_LABELS[action]} row ${id}?"` : ""}>${ACTION_LABELS[action]}</button>`,
)}
</form>`
    : ""
}
<section class="panel"><dl class="detail">
<dt>Table</dt><dd>${table.name} (${table.form})</dd>
<dt>Group</dt><dd>${groupLabel(row.group)}</dd>
<dt>Attempt</dt><dd>${row.attempt}${table.maxAttempts === undefined ? "" : html` of ${table.maxAttempts}`}</dd>
<dt>Run at</dt><dd>${time(row.runAt)}</dd>
<dt>Priority</dt><dd>${row.priority ?? "—"}</dd>
<dt>Key</dt><dd class="mono">${row.key ?? "—"}</dd>
<dt>Processed at</dt><dd>${time(row.processedAt)}</dd>
<dt>Locked until</dt><dd>${time(row.lockedUntil)}</dd>
<dt>Held by</dt><dd>${describeHolder(row.holder)}</dd>
</dl></section>
<section class="panel"><h2>Headers</h2>${headers === undefined ? html`<p class="muted">none</p>` : html`<pre>${headers}</pre>`}</section>
<section class="panel"><h2>Payload</h2><pre data-payload>${payload}</pre></section>`;
  return layout(context, `${table.name} ${id}`, body);
}
