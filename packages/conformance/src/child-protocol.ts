/**
 * What the parent tells a child runner (`@rowclaim/conformance/child`) and what the child
 * prints back, one JSON object a line on stdout.
 *
 * @module
 */
import type { TableDescription } from "@rowclaim/core";

/** The environment variable that carries a {@link ChildConfig} as JSON (argv[2] works too). */
export const CHILD_CONFIG_ENV = "ROWCLAIM_CONFORMANCE_CHILD";

/** What a child runner does. */
export interface ChildConfig {
  /** The harness's `childDriverModule`: a file URL or absolute path of a module exporting `createDriver()`. */
  readonly driverModule: string;
  /** The table's description (the child calls `defineTable` on it). */
  readonly table: TableDescription;
  /**
   * `hang`: subscribe, report each delivery as `started`, never settle (the crash tests kill it);
   * `ack`: subscribe, report each delivery as `started` and ack it;
   * `publish`: publish `payloads` and exit.
   */
  readonly mode: "hang" | "ack" | "publish";
  /** Subscription options (`hang`, `ack`). */
  readonly subscribe?: {
    readonly group?: string | null;
    readonly workers?: number;
    readonly batch?: number;
    readonly prefetch?: number;
    readonly pollInterval?: number;
    readonly rateLimit?: {
      readonly limit: number;
      readonly intervalMs: number;
      readonly per?: "table" | "group";
    };
  };
  /** `ack` mode: how long each handler works before it acks, in milliseconds. Default 0. */
  readonly workMs?: number;
  /**
   * `ack` mode: a table (of the same database) each handler publishes to as it starts and again
   * as it finishes, `{ row, phase: "start" | "end", payload }`: the database's ids then order
   * every handler's start and end across processes (the per-key limits sub-suite).
   */
  readonly record?: TableDescription;
  /** JSON payloads to publish (`publish`). */
  readonly payloads?: readonly unknown[];
  /**
   * `publish` mode: publish each payload on its own with these unique options, all at once
   * (the unique jobs tests), instead of one `publishMany`.
   */
  readonly unique?: { readonly key: string; readonly mode?: string; readonly period?: number };
  /**
   * `publish` mode with `unique`: at most this many publishes in flight at once (default: all), so
   * that many children together stay within the server's connections.
   */
  readonly inFlight?: number;
}

/** A line a child prints. */
export type ChildEvent =
  | { readonly event: "ready" }
  | {
      readonly event: "started";
      readonly id: string;
      readonly attempt: number;
      readonly payload: unknown;
      readonly leaseExpiry: string | null;
      /** `Date.now()` in the child when the handler started. */
      readonly at: number;
    }
  | { readonly event: "finished"; readonly id: string; readonly at: number }
  | { readonly event: "published"; readonly ids: readonly string[] }
  | { readonly event: "closed" }
  | { readonly event: "failed"; readonly code: string | null; readonly message: string };
