/**
 * The names the pages use for core's row states and the dashboard's actions.
 *
 * @module
 */
import { type RowState, rowStates, type TableDefinition } from "@rowclaim/core";

/** A state's name for people. */
export const STATE_LABELS: Readonly<Record<RowState, string>> = Object.freeze({
  due: "Due",
  delayed: "Delayed",
  inWork: "In work",
  dead: "Dead",
  processed: "Processed",
});

/** What the dashboard can do to rows, each through one core function. */
export type RowAction = "retry" | "cancel" | "delete" | "redrive";

/** Every {@link RowAction}. */
export const ROW_ACTIONS: readonly RowAction[] = Object.freeze(["retry", "cancel", "delete", "redrive"]);

/** An action's name for people. */
export const ACTION_LABELS: Readonly<Record<RowAction, string>> = Object.freeze({
  retry: "Retry now",
  cancel: "Cancel",
  delete: "Delete",
  redrive: "Redrive",
});

/**
 * The states in whose lists an action is offered: core's `retryNow` and `cancel` change queued
 * rows (due, delayed), `remove` rows in any state but in work, `redrive` dead rows.
 */
export const ACTION_STATES: Readonly<Record<RowAction, readonly RowState[]>> = Object.freeze({
  retry: ["delayed"],
  cancel: ["due", "delayed"],
  delete: ["due", "delayed", "dead", "processed"],
  redrive: ["dead"],
});

/** What a list page shows: a state, a group (or every group), and a search. */
export interface ListQuery {
  readonly state: RowState;
  /** A group; `null`: rows without a group; `undefined`: every group. */
  readonly group: string | null | undefined;
  /** Text searched as an id, a key and in the payload. */
  readonly search: string | undefined;
  /**
   * Whether the payloads are searched even when the text names a row by id or key (a payload
   * search reads every row of the state: it is left out when an id or key already matched).
   */
  readonly inPayloads?: boolean;
}

/** The states a table's rows can be in: `processed` needs a `processedAt` column, `dead` a dead letter. */
export function statesOf(table: TableDefinition): readonly RowState[] {
  return rowStates.filter(
    (state) =>
      (state !== "processed" || table.columns.processedAt !== undefined) &&
      (state !== "dead" || table.deadLetter !== undefined),
  );
}
