/**
 * A table's groups with their counts and the pause and resume buttons.
 *
 * @module
 */

import type { QueueStatus } from "@rowclaim/core";
import { rowStates } from "@rowclaim/core";
import { html, type SafeHtml } from "../html.js";
import { STATE_LABELS } from "../model.js";
import type { PauseState } from "../source.js";
import { type CountScope, countCell, countKey } from "./counts.js";
import { canAct, csrfField, type PageContext } from "./layout.js";

/** A group's name for people. */
export function groupLabel(group: string | null): string {
  return group === null ? "(no group)" : group;
}

/** A “paused” badge the script shows or hides. */
export function pausedBadge(table: string, scope: CountScope, paused: boolean): SafeHtml {
  return html`<span class="badge paused" data-paused="${countKey(table, scope, "due")}"${paused ? "" : html` hidden`}>paused</span>`;
}

/** The pause or resume button of a table (`group` absent) or of one group. */
export function pauseButton(
  context: PageContext,
  table: string,
  group: string | null | undefined,
  paused: boolean,
): SafeHtml {
  if (!canAct(context) || group === null) return html``;
  const path = `${context.base}/tables/${encodeURIComponent(table)}/${paused ? "resume" : "pause"}`;
  return html`<form class="inline" method="post" action="${path}">${csrfField(context)}
${group === undefined ? "" : html`<input type="hidden" name="group" value="${group}">`}
<button type="submit">${paused ? "Resume" : "Pause"}</button></form>`;
}

/** The groups of a table as a grid, with links to their rows. */
export function groupRows(
  context: PageContext,
  table: string,
  status: QueueStatus,
  pause: PauseState,
): SafeHtml {
  if (status.groups.length === 0) return html`<p class="empty">No rows.</p>`;
  const link = (group: string | null) =>
    `${context.base}/tables/${encodeURIComponent(table)}?group=${encodeURIComponent(group === null ? "" : group)}${group === null ? "&nogroup=1" : ""}`;
  return html`<table class="grid">
<thead><tr><th>Group</th>${rowStates.map((state) => html`<th class="num">${STATE_LABELS[state]}</th>`)}<th>Oldest due</th><th></th></tr></thead>
<tbody>
${status.groups.map((group) => {
  const paused = pause.table || pause.groups.has(group.group);
  return html`<tr><td><a href="${link(group.group)}">${groupLabel(group.group)}</a> ${pausedBadge(table, group.group, paused)}</td>
${rowStates.map((state) => html`<td class="num">${countCell(table, group.group, state, group[state])}</td>`)}
<td>${group.oldestDueAgeMs === null ? "—" : formatAge(group.oldestDueAgeMs)}</td>
<td>${pause.table || !pause.supported ? "" : pauseButton(context, table, group.group, pause.groups.has(group.group))}</td></tr>`;
})}
</tbody></table>`;
}

/** A duration for people: `45 s`, `12 min`, `3 h`, `2 d`. */
export function formatAge(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 90) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 36) return `${hours} h`;
  return `${Math.round(hours / 24)} d`;
}
