/**
 * Counts that keep a page fast on millions of rows: a table's status is read through core's
 * `readQueueStatus` (every figure capped) at most once per `ttlMs`, by one read at a time; a page
 * asking while that read runs gets the last one at once. Each read is kept as a sample, and the
 * throughput chart is the difference between samples.
 *
 * @module
 */
import type { QueueStatus } from "@rowclaim/core";

/** One table's counts as a page gets them. */
export interface CachedCounts {
  readonly status: QueueStatus;
  /** Whether the value is older than the TTL (a fresh read is under way). */
  readonly stale: boolean;
}

/** A point of the throughput chart: rows that left the queue in one interval. */
export interface ThroughputPoint {
  /** The interval's end. */
  readonly at: Date;
  /** The interval's length, in milliseconds. */
  readonly ms: number;
  /** Rows newly processed in the interval (tables with `processedAt`), or rows that left the open states otherwise. */
  readonly done: number;
  /** Rows newly dead in the interval. */
  readonly dead: number;
}

interface Entry {
  value: QueueStatus | undefined;
  readAt: number;
  reading: Promise<QueueStatus> | undefined;
  samples: QueueStatus[];
  /** Set by an action: the next page waits for a fresh read instead of taking the stale one. */
  mustWait: boolean;
}

/** How many samples a table keeps for its chart. */
export const MAX_SAMPLES = 120;

/** Counts per table, read by `read` at most once per `ttlMs`. */
export class CountsCache {
  readonly #read: (table: string) => Promise<QueueStatus>;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(read: (table: string) => Promise<QueueStatus>, ttlMs: number, now: () => number = Date.now) {
    this.#read = read;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /**
   * The counts of `table`: the cached read while it is fresh; while a new read is under way,
   * the last one (so that many viewers share one read); otherwise a new read, waited for.
   */
  async get(table: string): Promise<CachedCounts> {
    const entry = this.#entry(table);
    const age = this.#now() - entry.readAt;
    if (entry.value !== undefined && age < this.#ttlMs) return { status: entry.value, stale: false };
    if (entry.value !== undefined && entry.reading !== undefined && !entry.mustWait)
      return { status: entry.value, stale: true };
    return { status: await this.#start(table, entry), stale: false };
  }

  /** The last counts read of `table`, however old, without reading. */
  peek(table: string): QueueStatus | undefined {
    return this.#entries.get(table)?.value;
  }

  /** Forgets the cached counts of `table` (after an action): the next page waits for a new read. */
  invalidate(table: string): void {
    const entry = this.#entries.get(table);
    if (entry === undefined) return;
    entry.readAt = Number.NEGATIVE_INFINITY;
    entry.mustWait = true;
  }

  /** The throughput between the kept samples of `table`, oldest first. */
  throughput(table: string): readonly ThroughputPoint[] {
    const samples = this.#entries.get(table)?.samples ?? [];
    const points: ThroughputPoint[] = [];
    for (let index = 1; index < samples.length; index += 1) {
      const before = samples[index - 1];
      const after = samples[index];
      if (before === undefined || after === undefined) continue;
      const done = processedOf(after) - processedOf(before);
      const open = openOf(before) - openOf(after);
      points.push({
        at: after.at,
        ms: after.at.getTime() - before.at.getTime(),
        done: Math.max(0, done > 0 ? done : open),
        dead: Math.max(0, deadOf(after) - deadOf(before)),
      });
    }
    return points;
  }

  #entry(table: string): Entry {
    let entry = this.#entries.get(table);
    if (entry === undefined) {
      entry = {
        value: undefined,
        readAt: Number.NEGATIVE_INFINITY,
        reading: undefined,
        samples: [],
        mustWait: false,
      };
      this.#entries.set(table, entry);
    }
    return entry;
  }

  #start(table: string, entry: Entry): Promise<QueueStatus> {
    if (entry.reading !== undefined) return entry.reading;
    const reading = this.#read(table).then(
      (status) => {
        entry.value = status;
        entry.readAt = this.#now();
        entry.mustWait = false;
        entry.reading = undefined;
        entry.samples.push(status);
        if (entry.samples.length > MAX_SAMPLES) entry.samples.splice(0, entry.samples.length - MAX_SAMPLES);
        return status;
      },
      (error: unknown) => {
        entry.reading = undefined;
        throw error;
      },
    );
    entry.reading = reading;
    return reading;
  }
}

function processedOf(status: QueueStatus): number {
  return status.groups.reduce((total, group) => total + group.processed.count, 0);
}

function deadOf(status: QueueStatus): number {
  return status.groups.reduce((total, group) => total + group.dead.count, 0);
}

function openOf(status: QueueStatus): number {
  return status.groups.reduce(
    (total, group) => total + group.due.count + group.delayed.count + group.inWork.count,
    0,
  );
}
