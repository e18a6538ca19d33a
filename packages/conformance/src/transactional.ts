/**
 * Transactional handlers: `delivery.transaction(body)` commits the body's writes to the queue's
 * database with the settlement, in every form the driver offers them
 * (`capabilities.transactionalHandlers`). Each test writes rows into a side table (columns `job`
 * and `worker`, no constraint that would hide a duplicate) through the harness's
 * `childDriverModule`'s `insertSideRow(client, table, job, worker)`, and counts them: every
 * published row must end with exactly one side row, however the processes die.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ack,
  BrokerError,
  type ClaimFormName,
  type Delivery,
  deadLetter,
  defineTable,
  type Outcome,
  type TransactionBody,
} from "@rowclaim/core";
import { isPromiseLike } from "@rowclaim/core/driver";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { ChildRunner, isReady } from "./child-process.js";
import type { ChildConfig } from "./child-protocol.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, deadLetterDescription, describeTable, formLabels } from "./tables.js";
import {
  importDriverModule,
  type TransactionalChildConfig,
  type TransactionalDriverModule,
} from "./transactional-support.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "txh";

/** How many rows the crash test publishes. */
const CRASH_ROWS = 200;
/**
 * How many child processes the crash test kills at most before it drains the rest itself: 6, or
 * 16 in a deeper run (`ROWCLAIM_LOAD=1`, as the repository's load step sets).
 */
const CRASH_ROUNDS = process.env.ROWCLAIM_LOAD === "1" ? 16 : 6;

/** The side-table writer of the driver under test. */
interface SideWriter {
  readonly insert: NonNullable<TransactionalDriverModule["insertSideRow"]>;
  readonly sync: boolean;
}

/**
 * Skips the test unless the driver offers `form` and transactional handlers in it, and the
 * harness's `childDriverModule` exports `insertSideRow`.
 */
async function requireTransactional(fx: Fixture, form: ClaimFormName): Promise<SideWriter> {
  const caps = await fx.requireForm(form);
  if (!(caps.transactionalHandlers ?? []).includes(form)) {
    fx.skip(`the ${fx.harness.name} driver offers no transactional handlers in the ${formLabels[form]} form`);
  }
  const module = await importDriverModule(fx.requireChildren());
  if (typeof module.insertSideRow !== "function") {
    fx.skip(
      `the ${fx.harness.name} harness's childDriverModule exports no insertSideRow(client, table, job, worker)`,
    );
  }
  return { insert: module.insertSideRow, sync: module.transactionBodies === "sync" };
}

/** A side table of the test's own (dropped afterwards), and how to count its rows by job. */
async function sideTable(fx: Fixture): Promise<{ name: string; byJob(): Promise<Map<string, string[]>> }> {
  const name = fx.uniqueName();
  await fx.harness.execute(`CREATE TABLE ${name} (job VARCHAR(100) NOT NULL, worker VARCHAR(100) NOT NULL)`);
  const definition = defineTable({ name, columns: { id: "job", payload: "worker" } });
  fx.dropLater(definition);
  return {
    name,
    async byJob() {
      const rows = await fx.rows(definition);
      const jobs = new Map<string, string[]>();
      for (const row of rows) {
        const job = String(row.job);
        jobs.set(job, [...(jobs.get(job) ?? []), String(row.worker)]);
      }
      return jobs;
    },
  };
}

/**
 * A body that writes `(job, worker)` into the side table with the transaction's client, then
 * returns `then()` (which may throw): synchronously where the driver's bodies must be.
 */
function writeThen(
  writer: SideWriter,
  side: string,
  job: string,
  worker: string,
  then: () => Outcome,
): TransactionBody {
  return (client) => {
    const inserted = writer.insert(client, side, job, worker);
    if (isPromiseLike(inserted)) return Promise.resolve(inserted).then(then);
    return then();
  };
}

/** Starts a transactional child runner (killed when the test ends, however it ends). */
function transactionalChild(
  fx: Fixture,
  config: Omit<TransactionalChildConfig, "driverModule">,
): ChildRunner {
  const runner = fileURLToPath(new URL("./transactional-child.js", import.meta.url));
  const full: TransactionalChildConfig = { ...config, driverModule: fx.requireChildren() };
  // The child reads its own configuration; the runner only passes it on as JSON.
  const child = new ChildRunner(full as unknown as ChildConfig, runner);
  fx.releaseFirst(async () => {
    child.kill("SIGKILL");
    await child.exited;
  });
  return child;
}

/** The events a transactional child printed, by name. */
function childEvents(child: ChildRunner, name: string): Record<string, unknown>[] {
  return (child.events as readonly unknown[] as Record<string, unknown>[]).filter(
    (event) => event.event === name,
  );
}

/** Waits until `child` printed an event `name` for `job`, failing early when the child exits. */
async function childReports(child: ChildRunner, name: string, job: string): Promise<Record<string, unknown>> {
  return waitFor(`the child process to report "${name}" for ${job}`, () => {
    const found = childEvents(child, name).find((event) => event.job === job);
    if (found !== undefined) return found;
    if (child.hasExited)
      throw new Error(`The child process exited before reporting "${name}".\n${child.stderr}`);
    return undefined;
  });
}

/** Registers the transactional handlers sub-suite. */
export function transactionalSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("transactional handlers", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribe with transactional: true is accepted where the driver offers transactional handlers in the form and refused with UNSUPPORTED_FORM where it does not`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          const table = await fx.table(form);
          const broker = await fx.broker();
          const subscribing = caught(() => broker.subscribe(table, () => ack(), { transactional: true }));
          if ((caps.transactionalHandlers ?? []).includes(form)) expect(await subscribing).toBeUndefined();
          else expectCode(await subscribing, "UNSUPPORTED_FORM");
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a transactional handler's side-table write commits with its ack, exactly once per row`,
        async (fx) => {
          const writer = await requireTransactional(fx, form);
          const table = await fx.table(form, { lease: 5 });
          const side = await sideTable(fx);
          const broker = await fx.broker();
          const jobs = ["a", "b", "c", "d"];
          await broker.subscribe(
            table,
            (delivery: Delivery) =>
              delivery.transaction(
                writeThen(writer, side.name, String(delivery.payload), "only", () => ack()),
              ),
            { pollInterval: 20, workers: 2, transactional: true },
          );
          await broker.publishMany(
            table,
            jobs.map((payload) => ({ payload })),
          );
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
          const written = await side.byJob();
          expect(Object.fromEntries(written)).toEqual(Object.fromEntries(jobs.map((job) => [job, ["only"]])));
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a transactional body that throws leaves no side-table write, and the row is delivered again`,
        async (fx) => {
          const writer = await requireTransactional(fx, form);
          const table = await fx.table(form, { lease: 5 });
          const side = await sideTable(fx);
          const broker = await fx.broker();
          const attempts: number[] = [];
          await broker.subscribe(
            table,
            (delivery: Delivery) => {
              attempts.push(delivery.attempt);
              const first = attempts.length === 1;
              return delivery.transaction(
                writeThen(writer, side.name, String(delivery.payload), first ? "failed" : "second", () => {
                  if (first) throw new Error("the body fails after its write");
                  return ack();
                }),
              );
            },
            { pollInterval: 20, backoff: { baseMs: 10, maxMs: 10 }, transactional: true },
          );
          await broker.publish(table, "job");
          await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
          expect(attempts).toEqual([1, 2]);
          expect(Object.fromEntries(await side.byJob())).toEqual({ job: ["second"] });
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a broker that closes past its timeout while a transactional body runs keeps none of the body's writes, and the row is delivered again`,
        async (fx) => {
          const writer = await requireTransactional(fx, form);
          const table = await fx.table(form, { lease: 1 });
          const side = await sideTable(fx);
          // On a pool the user owns where the harness makes one: the pool stays open after the
          // close, so a connection given back to it would still run the body's later statements.
          const broker =
            fx.harness.createUserPoolDriver === undefined
              ? await fx.broker()
              : (await fx.userPoolBroker()).broker;
          const resume = fx.gate();
          let waiting = false;
          let result: Promise<unknown> | undefined;
          await broker.subscribe(
            table,
            async (delivery: Delivery) => {
              const job = String(delivery.payload);
              if (writer.sync) {
                // A synchronous body cannot wait: the handler waits before its transaction.
                waiting = true;
                await resume.opened;
              }
              result = caught(() =>
                delivery.transaction(async (client) => {
                  await writer.insert(client, side.name, job, "before the close");
                  waiting = true;
                  await resume.opened;
                  // Given up meanwhile: this write must fail or roll back, never commit on its own.
                  await writer.insert(client, side.name, job, "after the close");
                  return ack();
                }),
              );
              await result;
            },
            { pollInterval: 20, transactional: true },
          );
          await broker.publish(table, "job");
          await waitFor("the body to wait", () => waiting);
          await broker.close({ timeout: 100 });
          resume.open();
          await waitFor("the transaction to start", () => result !== undefined);
          expectCode(await result, "CLOSED");
          expect(Object.fromEntries(await side.byJob()), "writes of the given-up body").toEqual({});
          const again = await fx.broker();
          await again.subscribe(
            table,
            (delivery: Delivery) =>
              delivery.transaction(
                writeThen(writer, side.name, String(delivery.payload), "again", () => ack()),
              ),
            { pollInterval: 20, transactional: true },
          );
          await waitFor(
            "the row to be delivered again and acked",
            async () => (await fx.rows(table)).length === 0,
          );
          expect(Object.fromEntries(await side.byJob())).toEqual({ job: ["again"] });
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] processes killed (SIGKILL) at random points before, during and after their transactional settlements leave exactly one side-table row for each of ${CRASH_ROWS} rows`,
        async (fx) => {
          const writer = await requireTransactional(fx, form);
          const table = await fx.table(form, { lease: 1 });
          const side = await sideTable(fx);
          const broker = await fx.broker();
          const jobs = Array.from({ length: CRASH_ROWS }, (_, index) => `job-${index}`);
          await broker.publishMany(
            table,
            jobs.map((payload) => ({ payload })),
          );
          let kills = 0;
          let byChildren = 0;
          let interrupted = 0;
          for (let round = 0; round < CRASH_ROUNDS; round += 1) {
            if ((await fx.rows(table)).length === 0) break;
            const child = transactionalChild(fx, {
              table: table.description,
              side: side.name,
              worker: `child-${round}`,
              subscribe: { workers: 4, pollInterval: 20 },
              paceMs: 20,
            });
            await child.next("that it subscribed", isReady);
            // Kill once the child is at work, a random while later: before a body, inside one
            // (its transaction open), between the settlement and the commit, or after.
            await waitFor(
              "the child to claim a row",
              () => childEvents(child, "claimed").length > 0 || child.hasExited,
            );
            const seen = childEvents(child, "inserted").length + childEvents(child, "committed").length;
            const more = Math.floor(Math.random() * 24);
            await waitFor(
              "the child to go on",
              () =>
                childEvents(child, "inserted").length + childEvents(child, "committed").length >=
                  seen + more ||
                childEvents(child, "claimed").length >= jobs.length ||
                child.hasExited,
              { timeoutMs: 3000 },
            ).catch(() => undefined);
            await pause(Math.floor(Math.random() * 5));
            child.kill("SIGKILL");
            const exit = await child.exited;
            expect(exit, `child ${round} ended by itself before it was killed: ${child.stderr}`).toBeNull();
            kills += 1;
            const committed = new Set(childEvents(child, "committed").map((event) => String(event.job)));
            byChildren += committed.size;
            interrupted += childEvents(child, "inserted").filter(
              (event) => !committed.has(String(event.job)),
            ).length;
          }
          if (process.env.ROWCLAIM_CONFORMANCE_LOG) {
            console.info(
              `[${fx.harness.name} ${form}] ${kills} kills, ${byChildren} rows committed by children, ${interrupted} transactions killed after their write`,
            );
          }
          expect(kills, "no child process was killed").toBeGreaterThan(0);
          expect(byChildren, "the killed children committed no row").toBeGreaterThan(0);
          await broker.subscribe(
            table,
            (delivery: Delivery) =>
              delivery.transaction(
                writeThen(writer, side.name, String(delivery.payload), "drain", () => ack()),
              ),
            { pollInterval: 20, workers: 4, transactional: true },
          );
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0, {
            timeoutMs: 60_000,
          });
          const written = await side.byJob();
          const wrong = jobs.filter((job) => written.get(job)?.length !== 1);
          expect(
            wrong.map((job) => `${job}: ${JSON.stringify(written.get(job) ?? [])}`),
            "rows without exactly one side-table row",
          ).toEqual([]);
          expect(written.size).toBe(jobs.length);
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "[lease] a worker frozen past its lease (SIGSTOP) has its late transaction rolled back with LEASE_LOST, and the side table holds the new owner's row only",
      async (fx) => {
        const writer = await requireTransactional(fx, "lease");
        const table = await fx.table("lease", { lease: 1 });
        const side = await sideTable(fx);
        const holdFile = join(tmpdir(), `${fx.uniqueName()}.go`);
        const child = transactionalChild(fx, {
          table: table.description,
          side: side.name,
          worker: "frozen",
          subscribe: { workers: 1, pollInterval: 20 },
          holdFile,
        });
        await child.next("that it subscribed", isReady);
        const broker = await fx.broker();
        await broker.publish(table, "job");
        // Async drivers hold inside the body (the insert made, the transaction open); SQLite's
        // synchronous bodies hold before the transaction opens.
        await childReports(child, writer.sync ? "claimed" : "inserted", "job");
        child.kill("SIGSTOP");
        await broker.subscribe(
          table,
          (delivery: Delivery) =>
            delivery.transaction(
              writeThen(writer, side.name, String(delivery.payload), "new owner", () => ack()),
            ),
          { pollInterval: 20, transactional: true },
        );
        await waitFor(
          "the new owner to take the row and commit",
          async () => (await fx.rows(table)).length === 0,
        );
        writeFileSync(holdFile, "go");
        fx.releaseFirst(async () => {
          await import("node:fs/promises").then((fs) => fs.rm(holdFile, { force: true }));
        });
        child.kill("SIGCONT");
        const failed = await childReports(child, "failed", "job");
        expect(failed.code, "the late transaction's error").toBe("LEASE_LOST");
        expect(childEvents(child, "committed"), "the late transaction committed").toEqual([]);
        expect(Object.fromEntries(await side.byJob())).toEqual({ job: ["new owner"] });
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[rowLock] in a row lock batch, a body that throws takes back only its own writes, and the batch's other rows commit theirs",
      async (fx) => {
        const writer = await requireTransactional(fx, "rowLock");
        const table = await fx.table("rowLock");
        const side = await sideTable(fx);
        const broker = await fx.broker();
        await broker.publishMany(table, [{ payload: "ok" }, { payload: "fails" }]);
        const seen: { job: string; attempt: number }[] = [];
        await broker.subscribe(
          table,
          (delivery: Delivery) => {
            const job = String(delivery.payload);
            seen.push({ job, attempt: delivery.attempt });
            return delivery.transaction(
              writeThen(writer, side.name, job, `attempt-${delivery.attempt}`, () => {
                if (job === "fails" && delivery.attempt === 1) throw new Error("this body fails");
                return ack();
              }),
            );
          },
          { pollInterval: 20, workers: 2, batch: 2, backoff: { baseMs: 10, maxMs: 10 }, transactional: true },
        );
        await waitFor("both rows to be acked", async () => (await fx.rows(table)).length === 0);
        expect(seen.slice(0, 2).map((s) => s.attempt)).toEqual([1, 1]);
        expect(Object.fromEntries(await side.byJob())).toEqual({ ok: ["attempt-1"], fails: ["attempt-2"] });
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[rowLock] in a row lock batch, a settlement that fails rolls back every row's transactional writes, and the other rows' transaction calls fail with BATCH_ROLLED_BACK",
      async (fx) => {
        const writer = await requireTransactional(fx, "rowLock");
        const name = fx.uniqueName();
        const description = describeTable("rowLock", name, {
          roles: ["attempt", "runAt"],
          maxAttempts: 5,
          deadLetter: { table: `${name}_dead` },
        });
        const dead = await fx.tableFrom(deadLetterDescription(description, `${name}_dead`));
        const table = await fx.tableFrom(description);
        const side = await sideTable(fx);
        const broker = await fx.broker();
        await broker.publishMany(table, [{ payload: "acked" }, { payload: "moved" }]);
        const rounds = new Map<string, number>();
        const firstRound: { job: string; result: Promise<unknown> }[] = [];
        let ackedBodyDone = false;
        const bothClaimed = fx.gate();
        await broker.subscribe(
          table,
          async (delivery: Delivery) => {
            const job = String(delivery.payload);
            const round = (rounds.get(job) ?? 0) + 1;
            rounds.set(job, round);
            if (round > 1) {
              return delivery.transaction(writeThen(writer, side.name, job, "second round", () => ack()));
            }
            if (job === "acked") {
              // This body's write and ack are made, and wait in the batch's open transaction.
              const result = caught(() =>
                delivery.transaction(
                  writeThen(writer, side.name, job, "first round", () => {
                    ackedBodyDone = true;
                    return ack();
                  }),
                ),
              );
              firstRound.push({ job, result });
              await result;
              return undefined;
            }
            await bothClaimed.opened;
            await waitFor("the other row's body to be done", () => ackedBodyDone);
            // The dead-letter table is gone: the move this body's outcome asks for fails in the database.
            await harness.dropTable(dead);
            const result = caught(() =>
              delivery.transaction(writeThen(writer, side.name, job, "first round", () => deadLetter())),
            );
            firstRound.push({ job, result });
            await result;
            return undefined;
          },
          { batch: 2, workers: 2, pollInterval: 20, transactional: true },
        );
        await waitFor("both rows to be claimed in one batch", () => rounds.size === 2);
        bothClaimed.open();
        await waitFor("both first-round transactions to end", () => firstRound.length === 2);
        const acked = await firstRound.find((entry) => entry.job === "acked")?.result;
        const moved = await firstRound.find((entry) => entry.job === "moved")?.result;
        expect(moved, "the move to a missing table must fail").toBeDefined();
        expect(BrokerError.is(moved, "BATCH_ROLLED_BACK")).toBe(false);
        expectCode(acked, "BATCH_ROLLED_BACK");
        await waitFor(
          "both rows to be acked in a second round",
          async () => (await fx.rows(table)).length === 0,
        );
        // The rollback took back the first round's writes of both rows, the committed body's too.
        expect(Object.fromEntries(await side.byJob())).toEqual({
          acked: ["second round"],
          moved: ["second round"],
        });
      },
    );
  });
}
