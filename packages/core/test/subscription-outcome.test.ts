import { describe, expect, it } from "vitest";
import {
  ack,
  BatchRolledBackError,
  BrokerError,
  ClosedError,
  ConnectionLostError,
  ConstraintError,
  DeclarationError,
  deadLetter,
  defineTable,
  drop,
  InvalidArgumentError,
  LeaseLostError,
  type Outcome,
  retry,
  retryAfter,
} from "../src/index.js";
import type { ClaimedRow } from "../src/rows.js";
import {
  bodyOutcome,
  counterOf,
  droppedDelayMs,
  dueAgainAt,
  failureOutcome,
  finishesRow,
  freesRows,
  handlerOutcome,
  heldDelayMs,
  invalidPayloadOutcome,
  leaseDueAt,
  MAX_REMEMBERED,
  type OutcomePolicy,
  pastMaxAttempts,
  RememberedSettlements,
  rememberAfter,
  retryOutcome,
  settlementFor,
} from "../src/subscription-outcome.js";

const columns = { id: "id", payload: "payload", attempt: "attempt" } as const;
const plain = defineTable({ name: "jobs", columns });
const withRunAt = defineTable({ name: "jobs", columns: { ...columns, runAt: "run_at" } });
const withProcessedAt = defineTable({ name: "jobs", columns: { ...columns, processedAt: "processed_at" } });
const leased = defineTable({ name: "jobs", columns: { ...columns, lockedUntil: "locked_until" } });
const advisory = defineTable({ name: "jobs", columns, extraColumns: ["account"], advisoryLock: "{account}" });
const fifo = defineTable({ name: "jobs", columns: { ...columns, group: "queue" }, fifo: true });

const backoff = { baseMs: 100, maxMs: 1000 };
const capped: OutcomePolicy = { maxAttempts: 3, deadLetter: { group: "dead" }, backoff };
const uncapped: OutcomePolicy = { maxAttempts: undefined, deadLetter: undefined, backoff };
const now = (): number => 1_000_000;

function row(attempt: number, id: string | number = 7): ClaimedRow {
  return { id, payload: {}, attempt, group: null, headers: {}, row: {} };
}

describe("a failed attempt is retried with backoff, and dead-lettered at maxAttempts", () => {
  it("a retry waits the backoff of the attempt, doubling from baseMs up to maxMs", () => {
    expect(retryOutcome(1, capped)).toEqual(retryAfter(100));
    expect(retryOutcome(3, capped)).toEqual(retryAfter(400));
    expect(retryOutcome(9, capped)).toEqual(retryAfter(1000));
  });
  it("a failure before maxAttempts is a retry after the backoff", () => {
    expect(failureOutcome(2, capped)).toEqual(retryAfter(200));
  });
  it("a failure at maxAttempts goes to the dead letter", () => {
    expect(failureOutcome(3, capped)).toBe(deadLetter());
  });
  it("without maxAttempts every failure is a retry", () => {
    expect(failureOutcome(50, uncapped)).toEqual(retryAfter(1000));
  });
  it("an attempt past maxAttempts is dead-lettered without the handler; at it, the handler runs", () => {
    expect(pastMaxAttempts(4, capped)).toBe(true);
    expect(pastMaxAttempts(3, capped)).toBe(false);
    expect(pastMaxAttempts(1_000, uncapped)).toBe(false);
  });
});

describe("a payload the schema refuses goes to the dead letter where there is one", () => {
  it("with a dead-letter target, the first attempt is dead-lettered", () => {
    expect(invalidPayloadOutcome(1, capped)).toBe(deadLetter());
  });
  it("without one, it fails as a handler failure of its attempt", () => {
    expect(invalidPayloadOutcome(1, uncapped)).toEqual(retryAfter(100));
  });
});

describe("a handler's (or a transaction body's) return value is its outcome", () => {
  it("nothing acks; an outcome is itself", () => {
    expect(handlerOutcome(undefined)).toBe(ack());
    expect(handlerOutcome(retry())).toBe(retry());
    expect(bodyOutcome(undefined, plain)).toBe(ack());
    expect(bodyOutcome(drop(), plain)).toBe(drop());
  });
  it("anything else is refused with INVALID_ARGUMENT", () => {
    expect(() => handlerOutcome({ kind: "later" })).toThrow(InvalidArgumentError);
    expect(() => bodyOutcome(42, plain)).toThrow(InvalidArgumentError);
  });
});

describe("ack and drop finish the row; a retry or a dead letter gives it back first", () => {
  it("finishesRow says which frees the worker as soon as the settlement is sent", () => {
    expect(finishesRow(ack())).toBe(true);
    expect(finishesRow(drop())).toBe(true);
    expect(finishesRow(retry())).toBe(false);
    expect(finishesRow(retryAfter(5))).toBe(false);
    expect(finishesRow(deadLetter())).toBe(false);
  });
});

describe("an outcome becomes one settlement, by the table's columns", () => {
  it("ack and drop delete the row, or mark it processed where the table has processedAt", () => {
    expect(settlementFor(ack(), plain, capped, now)).toEqual({ kind: "delete" });
    expect(settlementFor(drop(), plain, capped, now)).toEqual({ kind: "delete" });
    const marked = settlementFor(ack(), withProcessedAt, capped, now);
    expect(marked.kind).toBe("markProcessed");
    expect(marked.kind === "markProcessed" && marked.at instanceof Date).toBe(true);
  });
  it("a retry releases the row keeping its due time", () => {
    expect(settlementFor(retry(), withRunAt, capped, now)).toEqual({ kind: "release", runAt: null });
  });
  it("a retry after a delay writes the due time by the host's clock where the table has runAt", () => {
    expect(settlementFor(retryAfter(250), withRunAt, capped, now)).toEqual({
      kind: "release",
      runAt: new Date(1_000_250),
    });
  });
  it("without runAt, the settlement of a delayed retry releases at once (the delivery holds the delay)", () => {
    expect(settlementFor(retryAfter(250), plain, capped, now)).toEqual({ kind: "release", runAt: null });
    expect(heldDelayMs(retryAfter(250), plain)).toBe(250);
    expect(heldDelayMs(retryAfter(0), plain)).toBeUndefined();
    expect(heldDelayMs(retryAfter(250), withRunAt)).toBeUndefined();
    expect(heldDelayMs(retry(), plain)).toBeUndefined();
    expect(droppedDelayMs(retryAfter(0), plain)).toBe(0);
    expect(droppedDelayMs(retryAfter(250), withRunAt)).toBeUndefined();
  });
  it("a dead letter moves the row to the target group or table", () => {
    expect(settlementFor(deadLetter(), plain, capped, now)).toEqual({ kind: "moveToGroup", group: "dead" });
    const toTable = { ...capped, deadLetter: { table: "jobs_dead" } };
    expect(settlementFor(deadLetter(), plain, toTable, now)).toEqual({
      kind: "moveToTable",
      table: "jobs_dead",
    });
  });
  it("a dead letter with no target is refused with DECLARATION", () => {
    expect(() => settlementFor(deadLetter(), plain, uncapped, now)).toThrow(DeclarationError);
  });
});

describe("a settlement moves one counter and may free rows for the next claim", () => {
  it("delete and markProcessed count as acked, release as retried, a move as dead-lettered", () => {
    expect(counterOf({ kind: "delete" })).toBe("acked");
    expect(counterOf({ kind: "markProcessed", at: new Date(0) })).toBe("acked");
    expect(counterOf({ kind: "release", runAt: null })).toBe("retried");
    expect(counterOf({ kind: "moveToGroup", group: "dead" })).toBe("deadLettered");
    expect(counterOf({ kind: "moveToTable", table: "dead" })).toBe("deadLettered");
  });
  it("a release frees a row; in a FIFO table or the advisory form every settlement does", () => {
    expect(freesRows({ kind: "release", runAt: null }, plain)).toBe(true);
    expect(freesRows({ kind: "delete" }, plain)).toBe(false);
    expect(freesRows({ kind: "delete" }, fifo)).toBe(true);
    expect(freesRows({ kind: "delete" }, advisory)).toBe(true);
  });
  it("a release with a due time wakes the claim loop then", () => {
    expect(dueAgainAt({ kind: "release", runAt: new Date(5) })).toEqual(new Date(5));
    expect(dueAgainAt({ kind: "release", runAt: null })).toBeUndefined();
    expect(dueAgainAt({ kind: "delete" })).toBeUndefined();
  });
  it("a lease moved to a due time is claimable once its whole second has run out", () => {
    expect(leaseDueAt(1_200)).toBe(2_001);
    expect(leaseDueAt(2_000)).toBe(2_001);
  });
});

describe("a failed settlement is remembered for the row's next claim where nothing of it landed", () => {
  const failed = (error: unknown, outcome: Outcome = ack(), transactional = false) => ({
    outcome,
    error,
    transactional,
  });
  it("a database error settles the next claim as a handler failure of this attempt", () => {
    const error = new ConstraintError("refused");
    expect(rememberAfter(failed(error), row(2), leased, capped)).toEqual({
      attempt: 3,
      outcome: retryAfter(200),
    });
    expect(rememberAfter(failed(error), row(3), leased, capped)).toEqual({
      attempt: 4,
      outcome: deadLetter(),
    });
  });
  it("the row lock form reads the same attempt on the next claim (it counts at settlement)", () => {
    const error = new ConstraintError("refused");
    expect(rememberAfter(failed(error), row(2), plain, capped)).toEqual({
      attempt: 2,
      outcome: retryAfter(200),
    });
  });
  it("a refused dead letter becomes a retry with backoff", () => {
    const error = new ConstraintError("refused");
    expect(rememberAfter(failed(error, deadLetter()), row(3), plain, capped)).toEqual({
      attempt: 3,
      outcome: retryAfter(400),
    });
  });
  it("a batch rolled back settles the row's own outcome again, in the row lock form, not transactional", () => {
    const error = new BatchRolledBackError("another settlement failed");
    expect(rememberAfter(failed(error, drop()), row(1), plain, capped)).toEqual({
      attempt: 1,
      outcome: drop(),
    });
    expect(rememberAfter(failed(error, drop(), true), row(1), plain, capped)).toBeUndefined();
    expect(rememberAfter(failed(error, drop()), row(1), leased, capped)).toBeUndefined();
  });
  it("a lost hold, a lost connection, a close or a refused outcome is not remembered", () => {
    for (const error of [
      new LeaseLostError("lost"),
      new ConnectionLostError("gone"),
      new ClosedError("closed"),
      new DeclarationError("no target"),
      new InvalidArgumentError("not an outcome"),
    ]) {
      expect(BrokerError.is(error)).toBe(true);
      expect(rememberAfter(failed(error), row(1), plain, capped)).toBeUndefined();
    }
  });
});

describe("remembered settlements apply once, to the attempt they were kept for", () => {
  it("the next claim reading that attempt takes the outcome, and the row is forgotten", () => {
    const memory = new RememberedSettlements();
    memory.keep(row(2), { attempt: 3, outcome: retry() });
    expect(memory.take(row(3))).toBe(retry());
    expect(memory.take(row(3))).toBeUndefined();
  });
  it("a claim reading another attempt (something landed) forgets the row without using it", () => {
    const memory = new RememberedSettlements();
    memory.keep(row(2), { attempt: 3, outcome: retry() });
    expect(memory.take(row(4))).toBeUndefined();
    expect(memory.size).toBe(0);
  });
  it("at most MAX_REMEMBERED rows are kept, the oldest forgotten first", () => {
    const memory = new RememberedSettlements();
    for (let id = 0; id <= MAX_REMEMBERED; id += 1) memory.keep(row(1, id), { attempt: 1, outcome: ack() });
    expect(memory.size).toBe(MAX_REMEMBERED);
    expect(memory.take(row(1, 0))).toBeUndefined();
    expect(memory.take(row(1, MAX_REMEMBERED))).toBe(ack());
  });
});
