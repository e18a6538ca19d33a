// The row lock and advisory lock runtimes claim at the broker's clock (`createBroker({ clock })`),
// as the lease runtime does: a row due by the broker's clock is claimed, whatever the machine's
// clock says. The test's clock stands years from the machine's; every claim's `now` is recorded.
import { ack, type TableDescription } from "@rowclaim/core";
import type { ClaimRequest, Driver } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import type { MemoryAdvisoryClaimer, MemoryRowLockClaimer } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";
import { replacingClaimerMethod, START, setUp } from "./memory-setup.js";

const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" };

/** `driver` whose claimers record the `now` of every claim request they are given. */
function recordingClaims(driver: Driver, nows: Date[]): Driver {
  const record = (request: ClaimRequest): void => {
    nows.push(request.now);
  };
  const claiming = replacingClaimerMethod<MemoryRowLockClaimer | MemoryAdvisoryClaimer>(
    driver,
    "claim",
    (claimer) => (request: ClaimRequest) => {
      record(request);
      return claimer.claim(request);
    },
  );
  const carrying = replacingClaimerMethod<MemoryRowLockClaimer>(claiming, "endBatchWithClaim", (claimer) => {
    return (...args: Parameters<MemoryRowLockClaimer["endBatchWithClaim"]>) => {
      record(args[2]);
      return claimer.endBatchWithClaim(...args);
    };
  });
  return replacingClaimerMethod<MemoryAdvisoryClaimer>(carrying, "claimWithAcks", (claimer) => {
    return (...args: Parameters<MemoryAdvisoryClaimer["claimWithAcks"]>) => {
      record(args[1]);
      return claimer.claimWithAcks(...args);
    };
  });
}

describe.each<{ readonly form: string; readonly description: TableDescription }>([
  { form: "row lock", description: { name: "clock_row_lock", columns } },
  { form: "advisory lock", description: { name: "clock_advisory", columns, advisoryLock: "{id}" } },
])("a $form claim", ({ description }) => {
  it("is made at the broker's clock: rows due by it (not by the machine's clock) are claimed", async () => {
    const t = setUp(description);
    const nows: Date[] = [];
    const broker = t.broker({}, recordingClaims(t.driver, nows));
    // Due at the broker's clock (years ahead of the machine's), so not due at the machine's.
    await broker.publishMany(
      t.table,
      [1, 2, 3].map((payload) => ({ payload, runAt: START })),
    );
    const subscription = await broker.subscribe(t.table, () => ack(), { workers: 1 });
    await waitFor("every row acked", () => subscription.stats.acked === 3, { timeoutMs: 5_000 });
    await broker.close();
    expect(nows.length).toBeGreaterThan(0);
    expect(new Set(nows.map((now) => now.getTime()))).toEqual(new Set([START.getTime()]));
  });
});
