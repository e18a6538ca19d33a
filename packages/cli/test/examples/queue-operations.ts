// The core README's "Cancel, redrive, prune" recipes, run by test/runtime/queue-operations.test.ts.
import {
  type Broker,
  cancel,
  listRows,
  type PruneResult,
  prune,
  type RedriveResult,
  type RowActionResult,
  type RowId,
  type RowPage,
  redrive,
  type TableDefinition,
} from "@rowclaim/core";

/** Cancels row `id` of `jobs`: a row in work is reported in `inWork`, never touched. */
export async function cancelExample(
  broker: Broker,
  jobs: TableDefinition,
  id: RowId,
): Promise<RowActionResult> {
  // #region cancel
  const result = await cancel(broker, jobs, { ids: [id] });
  // result.changed: cancelled (deleted); result.inWork: in work, left alone; result.missing: not queued
  // #endregion cancel
  return result;
}

/** Looks at the dead rows of `jobs`, then sends every one back, in batches of 500, logging progress. */
export async function redriveExample(
  broker: Broker,
  jobs: TableDefinition,
): Promise<{ page: RowPage; result: RedriveResult }> {
  // #region redrive
  const page = await listRows(broker, jobs, { state: "dead", limit: 20 }); // page.rows, page.next
  const result = await redrive(
    broker,
    jobs,
    { all: true },
    {
      batchSize: 500, // each batch one transaction; attempts reset, order kept
      onProgress: ({ done }) => console.log(`redriven ${done}`),
    },
  );
  // #endregion redrive
  return { page, result };
}

/** Deletes rows of `jobs` processed more than a week ago. */
export async function pruneExample(broker: Broker, jobs: TableDefinition): Promise<PruneResult> {
  // #region prune
  const week = 7 * 24 * 3600_000;
  const pruned = await prune(broker, jobs, { olderThan: week, batchSize: 1000 });
  // pruned.ran is false when another process was pruning the table: run it from cron anywhere
  // #endregion prune
  return pruned;
}
