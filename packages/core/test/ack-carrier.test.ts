/**
 * The ack carrier through the three runtimes, on scripted claimers (no database): an ack and the
 * worker's next claim made in the same turn travel together by construction, an ack no claim
 * takes goes alone at the end of the turn, and core falls back to the primitives a claimer has.
 * Each test counts which primitive the runtime called.
 */
import { describe, expect, it } from "vitest";
import { AdvisoryRuntime } from "../src/advisory-runtime.js";
import { BrokerError, LeaseLostError } from "../src/errors.js";
import type {
  Acks,
  AdvisoryClaimer,
  BatchEnd,
  Claimed,
  ClaimedWithAcks,
  ClaimRequest,
  HeldKeyRow,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  RowLockBatch,
  RowLockClaimer,
} from "../src/forms.js";
import type { FormRuntime, HeldRow } from "../src/held-row.js";
import { LeaseRuntime } from "../src/lease-runtime.js";
import { silentLogger } from "../src/logger.js";
import { RowLockRuntime } from "../src/row-lock-runtime.js";
import type { ClaimedRow } from "../src/rows.js";
import { defineTable } from "../src/table.js";
import type { AdvisoryToken, LeaseToken, RowLockToken } from "../src/tokens.js";

const rowLockTable = defineTable({ name: "jobs", columns: { id: "id", payload: "payload" } });
const leaseTable = defineTable({
  name: "leased",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
});
const advisoryTable = defineTable({
  name: "keyed",
  columns: { id: "id", payload: "payload" },
  extraColumns: ["account"],
  advisoryLock: "keyed-{account}",
});

/** Resolves after the event loop's current turn (and the carrier's end of turn) ran. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/** Claims one row with `runtime`, then forgets the calls made so far. */
async function claimOne(runtime: FormRuntime, calls: string[] = []): Promise<HeldRow> {
  const [first] = await runtime.claim(1);
  if (first === undefined) throw new Error("claimed nothing");
  calls.length = 0;
  return first;
}

function row(id: number): ClaimedRow {
  return { id, payload: id, attempt: 1, group: null, headers: {}, row: { id } };
}

/** Rows 1, 2, 3, … for each call of a claim, `limit` at a time. */
function rowSource(): (limit: number) => ClaimedRow[] {
  let next = 1;
  return (limit) => Array.from({ length: limit }, () => row(next++));
}

const rowLockToken: RowLockToken = { form: "rowLock" };

/** A row lock claimer recording its calls; `carries` adds `endBatchWithClaim`. */
function rowLockClaimer(options: { carries: boolean; carriedClaimFails?: boolean }): {
  claimer: RowLockClaimer;
  calls: string[];
  ended: (readonly ClaimedRow[] | undefined)[];
} {
  const calls: string[] = [];
  const ended: (readonly ClaimedRow[] | undefined)[] = [];
  const rows = rowSource();
  const claim = async (request: ClaimRequest): Promise<RowLockBatch | null> => ({
    rows: rows(request.limit),
    token: rowLockToken,
  });
  const claimer: RowLockClaimer = {
    form: "rowLock",
    async claim(request) {
      calls.push("claim");
      return claim(request);
    },
    async settle() {
      calls.push("settle");
    },
    async endBatch(_token, acks) {
      calls.push("endBatch");
      ended.push(acks?.rows);
    },
    async release() {
      calls.push("release");
    },
    async close() {},
    ...(options.carries
      ? {
          async endBatchWithClaim(
            _token: RowLockToken,
            acks: Acks<ClaimedRow>,
            next: ClaimRequest,
          ): Promise<BatchEnd> {
            calls.push("endBatchWithClaim");
            ended.push(acks.rows);
            if (options.carriedClaimFails === true) {
              return { ended: undefined, claimed: { error: new Error("injected claim failure") } };
            }
            return { ended: undefined, claimed: await claim(next) };
          },
        }
      : {}),
  };
  return { claimer, calls, ended };
}

describe("a row lock batch whose last row acks", () => {
  it("ends together with a claim made in the same turn: one endBatchWithClaim, no endBatch, no claim alone", async () => {
    const { claimer, calls, ended } = rowLockClaimer({ carries: true });
    const runtime = new RowLockRuntime(claimer, rowLockTable, silentLogger);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    const next = await runtime.claim(1);
    await settled;
    expect(calls).toEqual(["endBatchWithClaim"]);
    expect(ended).toEqual([[first.row]]);
    expect(next.map((hold) => hold.row.id)).toEqual([2]);
    await runtime.close();
  });

  it("ends alone at the end of the turn when no claim came in it", async () => {
    const { claimer, calls } = rowLockClaimer({ carries: true });
    const runtime = new RowLockRuntime(claimer, rowLockTable, silentLogger);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    expect(calls).toEqual([]);
    await nextTurn();
    await settled;
    expect(calls).toEqual(["endBatch"]);
    const later = await runtime.claim(1);
    expect(calls).toEqual(["endBatch", "claim"]);
    expect(later.map((hold) => hold.row.id)).toEqual([2]);
    await runtime.close();
  });

  it("ends at once, without waiting for the turn's end, where the claimer cannot carry a claim", async () => {
    const { claimer, calls } = rowLockClaimer({ carries: false });
    const runtime = new RowLockRuntime(claimer, rowLockTable, silentLogger);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    expect(calls).toEqual(["endBatch"]);
    await settled;
    await runtime.claim(1);
    expect(calls).toEqual(["endBatch", "claim"]);
    await runtime.close();
  });

  it("sends every ack of a batch with its end, as one call, and a retry inside the batch with settle", async () => {
    const { claimer, calls, ended } = rowLockClaimer({ carries: true });
    const runtime = new RowLockRuntime(claimer, rowLockTable, silentLogger);
    const held = await runtime.claim(3);
    calls.length = 0;
    const [a, b, c] = held;
    if (a === undefined || b === undefined || c === undefined) throw new Error("claimed too few");
    const settled = Promise.all([
      a.settle({ kind: "delete" }),
      b.settle({ kind: "release", runAt: null }),
      c.settle({ kind: "delete" }),
    ]);
    await nextTurn();
    await settled;
    expect(calls).toEqual(["settle", "endBatch"]);
    expect(ended).toEqual([[a.row, c.row]]);
    await runtime.close();
  });

  it("claims again on its own when the carried claim fails", async () => {
    const { claimer, calls } = rowLockClaimer({ carries: true, carriedClaimFails: true });
    const runtime = new RowLockRuntime(claimer, rowLockTable, silentLogger);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    const next = await runtime.claim(1);
    await settled;
    expect(calls).toEqual(["endBatchWithClaim", "claim"]);
    expect(next.map((hold) => hold.row.id)).toEqual([2]);
    await runtime.close();
  });

  it("fails its acked deliveries with the end's error when nothing of the batch committed", async () => {
    const { claimer } = rowLockClaimer({ carries: false });
    const refused = new Error("refused");
    const failing: RowLockClaimer = {
      ...claimer,
      endBatch: async () => {
        throw refused;
      },
    };
    const runtime = new RowLockRuntime(failing, rowLockTable, silentLogger);
    const first = await claimOne(runtime);
    await expect(first.settle({ kind: "delete" })).rejects.toBe(refused);
    await runtime.close();
  });
});

/** A lease claimer recording its calls, with the capabilities asked for. */
function leaseClaimer(options: {
  settleMany: boolean;
  claimWithAcks: boolean;
  /** Rows whose ack finds another token. */
  lost?: ReadonlySet<number>;
  /** Whether `claimWithAcks` fails. */
  carryFails?: boolean;
}): { claimer: LeaseClaimer; calls: string[]; acked: number[][] } {
  const calls: string[] = [];
  const acked: number[][] = [];
  const rows = rowSource();
  const lost = options.lost ?? new Set<number>();
  const claim = (request: LeaseClaimRequest): Claimed<LeaseToken>[] =>
    rows(request.limit).map((taken) => ({ row: taken, token: { form: "lease", expiry: request.expiry } }));
  const settledOf = (held: readonly HeldLease[]): boolean[] => held.map(({ id }) => !lost.has(Number(id)));
  const claimer: LeaseClaimer = {
    form: "lease",
    async claim(request) {
      calls.push("claim");
      return claim(request);
    },
    async extend(held) {
      return held.map(({ token }) => token);
    },
    async settle(id) {
      calls.push("settle");
      acked.push([Number(id)]);
      if (lost.has(Number(id))) {
        throw new LeaseLostError("lost", { table: leaseTable.name });
      }
    },
    async close() {},
    ...(options.settleMany
      ? {
          async settleMany(acks: Acks<HeldLease>): Promise<readonly boolean[]> {
            calls.push("settleMany");
            acked.push(acks.rows.map(({ id }) => Number(id)));
            return settledOf(acks.rows);
          },
        }
      : {}),
    ...(options.claimWithAcks
      ? {
          async claimWithAcks(
            acks: Acks<HeldLease>,
            request: LeaseClaimRequest,
          ): Promise<ClaimedWithAcks<LeaseToken>> {
            calls.push("claimWithAcks");
            if (options.carryFails === true) throw new Error("injected: the carrying claim failed");
            acked.push(acks.rows.map(({ id }) => Number(id)));
            return { settled: settledOf(acks.rows), claimed: claim(request) };
          },
        }
      : {}),
  };
  return { claimer, calls, acked };
}

describe("a lease ack", () => {
  it("travels with a claim made in the same turn: one claimWithAcks, no settle", async () => {
    const { claimer, calls, acked } = leaseClaimer({ settleMany: true, claimWithAcks: true });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const [first, second] = await runtime.claim(2);
    if (first === undefined || second === undefined) throw new Error("claimed too few");
    calls.length = 0;
    const settled = Promise.all([first.settle({ kind: "delete" }), second.settle({ kind: "delete" })]);
    const next = await runtime.claim(2);
    await settled;
    expect(calls).toEqual(["claimWithAcks"]);
    expect(acked).toEqual([[1, 2]]);
    expect(next.map((hold) => hold.row.id)).toEqual([3, 4]);
    await runtime.close();
  });

  it("that finds another token fails alone with LEASE_LOST; the acks beside it settle", async () => {
    const { claimer } = leaseClaimer({ settleMany: true, claimWithAcks: true, lost: new Set([2]) });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const [first, second] = await runtime.claim(2);
    if (first === undefined || second === undefined) throw new Error("claimed too few");
    const outcomes = Promise.allSettled([
      first.settle({ kind: "delete" }),
      second.settle({ kind: "delete" }),
    ]);
    await runtime.claim(1);
    const [one, two] = await outcomes;
    expect(one?.status).toBe("fulfilled");
    expect(two?.status === "rejected" && BrokerError.is(two.reason, "LEASE_LOST")).toBe(true);
    await runtime.close();
  });

  it("goes alone at the end of the turn when no claim came in it", async () => {
    const { claimer, calls } = leaseClaimer({ settleMany: true, claimWithAcks: true });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const [first, second] = await runtime.claim(2);
    if (first === undefined || second === undefined) throw new Error("claimed too few");
    calls.length = 0;
    const settled = Promise.all([first.settle({ kind: "delete" }), second.settle({ kind: "delete" })]);
    expect(calls).toEqual([]);
    await nextTurn();
    await settled;
    expect(calls).toEqual(["settleMany"]);
    await runtime.close();
  });

  it("ready after a claim carried the turn's earlier acks, waits through a turn the claim loop gives for its next claim", async () => {
    const { claimer, calls, acked } = leaseClaimer({ settleMany: true, claimWithAcks: true });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const [first, second] = await runtime.claim(2);
    if (first === undefined || second === undefined) throw new Error("claimed too few");
    calls.length = 0;
    const firstSettled = first.settle({ kind: "delete" });
    await runtime.claim(1);
    const secondSettled = second.settle({ kind: "delete" });
    // A claim loop on a synchronous driver gives the event loop a turn now and then, after a claim.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await runtime.claim(1);
    await Promise.all([firstSettled, secondSettled]);
    expect(calls).toEqual(["claimWithAcks", "claimWithAcks"]);
    expect(acked).toEqual([[1], [2]]);
    await runtime.close();
  });

  it("goes alone and the claim runs again on its own when the carrying claim fails", async () => {
    const { claimer, calls } = leaseClaimer({ settleMany: true, claimWithAcks: true, carryFails: true });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    const next = await runtime.claim(1);
    await settled;
    expect(calls).toEqual(["claimWithAcks", "settle", "claim"]);
    expect(next.map((hold) => hold.row.id)).toEqual([2]);
    await runtime.close();
  });

  it("falls back to one settle a row where the claimer carries acks but has no settleMany", async () => {
    const { claimer, calls } = leaseClaimer({ settleMany: false, claimWithAcks: true });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const held = await runtime.claim(3);
    calls.length = 0;
    const settled = Promise.all(held.map((hold) => hold.settle({ kind: "delete" })));
    await nextTurn();
    await settled;
    expect(calls).toEqual(["settle", "settle", "settle"]);
    await runtime.close();
  });

  it("goes at once where the claimer cannot carry acks, and acks ready while it runs go together next", async () => {
    const { claimer, calls, acked } = leaseClaimer({ settleMany: true, claimWithAcks: false });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const [a, b, c] = await runtime.claim(3);
    if (a === undefined || b === undefined || c === undefined) throw new Error("claimed too few");
    calls.length = 0;
    const first = a.settle({ kind: "delete" });
    expect(calls).toEqual(["settle"]);
    const rest = Promise.all([b.settle({ kind: "delete" }), c.settle({ kind: "delete" })]);
    await Promise.all([first, rest]);
    expect(calls).toEqual(["settle", "settleMany"]);
    expect(acked).toEqual([[1], [2, 3]]);
    await runtime.close();
  });

  it("goes with settle, at once, where the claimer has neither settleMany nor claimWithAcks", async () => {
    const { claimer, calls } = leaseClaimer({ settleMany: false, claimWithAcks: false });
    const runtime = new LeaseRuntime(claimer, leaseTable, silentLogger, false);
    const held = await runtime.claim(2);
    calls.length = 0;
    const settled = Promise.all(held.map((hold) => hold.settle({ kind: "delete" })));
    expect(calls).toEqual(["settle", "settle"]);
    await settled;
    await runtime.close();
  });
});

/** An advisory claimer recording its calls; `carries` adds `claimWithAcks`. */
function advisoryClaimer(carries: boolean): { claimer: AdvisoryClaimer; calls: string[] } {
  const calls: string[] = [];
  const rows = rowSource();
  const claim = (request: ClaimRequest): Claimed<AdvisoryToken>[] =>
    rows(request.limit).map((taken) => ({ row: taken, token: { form: "advisory", key: `k${taken.id}` } }));
  const claimer: AdvisoryClaimer = {
    form: "advisory",
    async claim(request) {
      calls.push("claim");
      return claim(request);
    },
    async settle() {
      calls.push("settle");
    },
    async release() {
      calls.push("release");
    },
    async close() {},
    ...(carries
      ? {
          async claimWithAcks(
            acks: Acks<HeldKeyRow>,
            request: ClaimRequest,
          ): Promise<ClaimedWithAcks<AdvisoryToken>> {
            calls.push("claimWithAcks");
            return { settled: acks.rows.map(() => true), claimed: claim(request) };
          },
        }
      : {}),
  };
  return { claimer, calls };
}

describe("an advisory ack", () => {
  it("travels with a claim made in the same turn, and goes alone with settle at the end of a turn without one", async () => {
    const { claimer, calls } = advisoryClaimer(true);
    const runtime = new AdvisoryRuntime(claimer, advisoryTable);
    const [first, second] = await runtime.claim(2);
    if (first === undefined || second === undefined) throw new Error("claimed too few");
    calls.length = 0;
    const carried = first.settle({ kind: "delete" });
    await runtime.claim(1);
    await carried;
    expect(calls).toEqual(["claimWithAcks"]);
    const alone = second.settle({ kind: "delete" });
    await nextTurn();
    await alone;
    expect(calls).toEqual(["claimWithAcks", "settle"]);
    await runtime.close();
  });

  it("goes with settle at once where the claimer cannot carry it", async () => {
    const { claimer, calls } = advisoryClaimer(false);
    const runtime = new AdvisoryRuntime(claimer, advisoryTable);
    const first = await claimOne(runtime, calls);
    const settled = first.settle({ kind: "delete" });
    expect(calls).toEqual(["settle"]);
    await settled;
    await runtime.close();
  });
});
