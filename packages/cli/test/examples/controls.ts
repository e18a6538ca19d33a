// The core README's "Pause, resume and rate limits" example, run by test/runtime/controls-example.test.ts.
import type { Broker, ControlState, Delivery, TableDefinition } from "@rowclaim/core";

/** Pauses group `bulk` of `emails`, reads the state, resumes it, then subscribes `send` at 50 a second. */
export async function controlsExample(
  broker: Broker,
  emails: TableDefinition,
  send: (delivery: Delivery) => Promise<void>,
): Promise<ControlState> {
  // #region controls
  // During an incident: no process claims from group "bulk" (rows in work finish) …
  await broker.pause(emails, { group: "bulk" });
  const state = await broker.controlState(emails); // { paused: false, pausedGroups: ["bulk"], rates: [] }
  // … until it is resumed, from this process or any other (or `rowclaim resume`).
  await broker.resume(emails, { group: "bulk" });

  // At most 50 rows a second to the provider, counted in the database across every process.
  await broker.subscribe(emails, send, { rateLimit: { limit: 50, intervalMs: 1000 } });
  // #endregion controls
  return state;
}
