/**
 * Count cells and the live-refresh keys the script updates them by.
 *
 * @module
 */

import type { RowState } from "@rowclaim/core";
import { type CappedCount, formatCount, type GroupStatus, type QueueStatus } from "@rowclaim/core";
import { html, type SafeHtml } from "../html.js";

/** Which group a count covers: a group (`null`: rows without one) or every group (`true`). */
export type CountScope = string | null | true;

/** The key a count cell is refreshed by: the table, the group scope and the state. */
export function countKey(table: string, group: CountScope, state: RowState): string {
  return JSON.stringify([table, group, state]);
}

/** A group's count of `state`. */
export function stateCount(group: GroupStatus, state: RowState): CappedCount {
  return group[state];
}

/** The count of `state` over the groups `scope` picks. */
export function scopedCount(status: QueueStatus, scope: CountScope, state: RowState): CappedCount {
  let count = 0;
  let capped = false;
  for (const group of status.groups) {
    if (scope !== true && group.group !== scope) continue;
    count += group[state].count;
    capped ||= group[state].capped;
  }
  return { count, capped };
}

/** A count as text in an element the script refreshes. */
export function countCell(table: string, scope: CountScope, state: RowState, count: CappedCount): SafeHtml {
  return html`<span data-count="${countKey(table, scope, state)}">${formatCount(count)}</span>`;
}
