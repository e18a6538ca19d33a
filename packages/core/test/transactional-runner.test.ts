// Core's transactional-handler algorithm against a scripted session: the control statements it
// runs in each form, one rollback after a failed lease body, LEASE_LOST when the fence matched
// no row, and the running-body tracking by client.
import { describe, expect, it } from "vitest";
import {
  BrokerError,
  bodyRunning,
  type LeaseToken,
  runAdvisoryTransaction,
  runLeaseTransaction,
  runRowLockTransaction,
  type Settlement,
  type TransactionDialect,
  type TransactionSession,
} from "../src/driver-api.js";
import { defineTable } from "../src/index.js";

class ScriptedSession implements TransactionSession {
  readonly client = {};
  readonly statements: string[] = [];
  broken = false;
  released = false;
  failOn: string | undefined;
  async text(sql: string): Promise<unknown> {
    this.statements.push(sql);
    if (sql === this.failOn) throw new Error(`refused ${sql}`);
    return undefined;
  }
  markBroken(): void {
    this.broken = true;
  }
  release(): void {
    this.released = true;
  }
}

function dialect(changed: number): TransactionDialect<ScriptedSession> {
  return {
    savepoint: "SAVEPOINT",
    rollbackToSavepoint: "ROLLBACK TO",
    releaseSavepoint: "RELEASE",
    commit: "COMMIT",
    rollback: "ROLLBACK",
    begin: (session) => session.text("BEGIN"),
    apply: async (session, settlement) => {
      session.statements.push(`settle ${settlement.kind}`);
      return changed;
    },
    normalize: (error) => error,
  };
}

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", lockedUntil: "lu" },
  lease: 1,
});
const ack: Settlement = { kind: "delete" };
const token = { expiry: new Date(0) } as unknown as LeaseToken;
const fence = async (): Promise<LeaseToken> => token;

describe("the transactional-handler algorithm in core", () => {
  it("runs a row lock body behind a savepoint and settles before releasing it", async () => {
    const session = new ScriptedSession();
    let seen = false;
    await runRowLockTransaction(session, dialect(1), (client) => {
      seen = bodyRunning(client as object);
      return ack;
    });
    expect(seen).toBe(true);
    expect(bodyRunning(session.client)).toBe(false);
    expect(session.statements).toEqual(["SAVEPOINT", "settle delete", "RELEASE"]);
  });

  it("rolls a throwing row lock body back to its savepoint and rethrows its error unchanged", async () => {
    const session = new ScriptedSession();
    const thrown = new Error("body");
    await expect(
      runRowLockTransaction(session, dialect(1), () => {
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    expect(session.statements).toEqual(["SAVEPOINT", "ROLLBACK TO"]);
  });

  it("rolls a throwing lease body back once and releases its connection", async () => {
    const session = new ScriptedSession();
    const thrown = new Error("body");
    const work = (): Settlement => {
      throw thrown;
    };
    await expect(
      runLeaseTransaction(
        async () => session,
        dialect(1),
        { table, id: 1 },
        work,
        fence,
        new AbortController().signal,
      ),
    ).rejects.toBe(thrown);
    expect(session.statements).toEqual(["BEGIN", "ROLLBACK"]);
    expect(session.released).toBe(true);
  });

  it("fails a lease settlement whose fence matched no row with LEASE_LOST and rolls back", async () => {
    const session = new ScriptedSession();
    const run = runLeaseTransaction(
      async () => session,
      dialect(0),
      { table, id: 1 },
      () => ack,
      fence,
      new AbortController().signal,
    );
    await expect(run).rejects.toSatisfy((error: unknown) => BrokerError.is(error, "LEASE_LOST"));
    expect(session.statements).toEqual(["BEGIN", "settle delete", "ROLLBACK"]);
    expect(session.released).toBe(true);
  });

  it("drops the lease connection when the delivery is given up while the body runs, and reports the abort", async () => {
    const session = new ScriptedSession();
    const controller = new AbortController();
    const reason = new Error("closed");
    const work = async (): Promise<Settlement> => {
      controller.abort(reason);
      throw new Error("session ended");
    };
    await expect(
      runLeaseTransaction(async () => session, dialect(1), { table, id: 1 }, work, fence, controller.signal),
    ).rejects.toBe(reason);
    expect(session.broken).toBe(true);
    expect(session.statements).toEqual(["BEGIN"]);
  });

  it("keeps the advisory key after a throwing body, and releases it after a settlement that found nothing", async () => {
    const session = new ScriptedSession();
    let releases = 0;
    const release = async (): Promise<void> => {
      releases += 1;
    };
    const target = { table, id: 1, key: "k" };
    await expect(
      runAdvisoryTransaction(
        session,
        dialect(0),
        target,
        () => {
          throw new Error("body");
        },
        release,
      ),
    ).rejects.toThrow("body");
    expect(releases).toBe(0);
    await expect(runAdvisoryTransaction(session, dialect(0), target, () => ack, release)).rejects.toSatisfy(
      (error: unknown) => BrokerError.is(error, "LEASE_LOST"),
    );
    expect(releases).toBe(1);
    expect(session.statements).toEqual(["BEGIN", "ROLLBACK", "BEGIN", "settle delete", "ROLLBACK"]);
  });
});
