/**
 * `@rowclaim/conformance`: the behavioural suite every rowclaim driver runs.
 *
 * @packageDocumentation
 */
export type { ConformanceHarness } from "./harness.js";
