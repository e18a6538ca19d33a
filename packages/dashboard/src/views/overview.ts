/**
 * The first page: every table, its counts per group, whether it is paused, its throughput.
 *
 * @module
 */

import type { QueueStatus } from "@rowclaim/core";
import { rowStates } from "@rowclaim/core";
import type { ThroughputPoint } from "../counts-cache.js";
import { html, type SafeHtml } from "../html.js";
import { STATE_LABELS } from "../model.js";
import type { PauseState } from "../source.js";
import { throughputChart } from "./chart.js";
import { countCell, scopedCount } from "./counts.js";
import { groupRows, pausedBadge } from "./groups.js";
import { layout, type PageContext } from "./layout.js";

/** One table on the overview. */
export interface OverviewTable {
  readonly name: string;
  readonly status: QueueStatus;
  readonly pause: PauseState;
  readonly throughput: readonly ThroughputPoint[];
}

/** The overview page. */
export function overviewPage(
  context: PageContext,
  tables: readonly OverviewTable[],
  refreshMs: number,
): SafeHtml {
  const body = html`<div data-counts-url="${context.base}/counts.json" data-refresh-ms="${refreshMs}">
<h1>Queues</h1>
${tables.map(
  (table) => html`<section class="panel">
<h2><a href="${context.base}/tables/${encodeURIComponent(table.name)}">${table.name}</a>
<span class="badge">${table.status.form}</span> ${pausedBadge(table.name, true, table.pause.table)}</h2>
<div class="cards">
${rowStates.map(
  (state) => html`<div class="card ${state}"><div class="label">${STATE_LABELS[state]}</div>
<div class="value">${countCell(table.name, true, state, scopedCount(table.status, true, state))}</div></div>`,
)}
</div>
<div class="chart">${throughputChart(table.throughput)}</div>
${groupRows(context, table.name, table.status, table.pause)}
</section>`,
)}
<p class="muted">Counts read at <span data-read-at>${tables[0]?.status.at.toISOString() ?? ""}</span>, each capped at ${tables[0]?.status.cap ?? ""} rows
(a capped figure reads “N+”).</p>
</div>`;
  return layout(context, "Queues", body);
}
