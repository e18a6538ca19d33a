/**
 * How the suite registers its tests: every test gets a fresh {@link Fixture} that it cleans up
 * afterwards; a test the harness opts out of is registered as skipped with the reason in its
 * name; one check fails when an opt-out names no test of the suite; and a failing test's message
 * carries what its brokers logged.
 *
 * @module
 */
import { describe, expect, it } from "vitest";
import { Fixture, type LogEntry, type TestScope } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";

/** How long one conformance test may run before vitest fails it. */
export const TEST_TIMEOUT_MS = 90_000;

const names = new WeakMap<ConformanceHarness, Set<string>>();
const checked = new WeakSet<ConformanceHarness>();

/** One test of the suite as {@link collectConformanceTests} returns it: runnable on its own. */
export interface CollectedTest {
  /** The test's title (what `harness.skip` names). */
  readonly title: string;
  /**
   * Runs the test with a fresh fixture, cleaned up afterwards. Resolves `"passed"`, or
   * `{ skipped: reason }` when the test skipped itself; rejects with the test's failure (its
   * message carrying what the brokers logged).
   */
  run(): Promise<"passed" | { readonly skipped: string }>;
}

/** Where {@link conformanceTest} puts tests while {@link collectConformanceTests} runs. */
let collecting: Map<string, CollectedTest> | undefined;

function registry(harness: ConformanceHarness): Set<string> {
  let set = names.get(harness);
  if (set === undefined) {
    set = new Set();
    names.set(harness, set);
  }
  return set;
}

/** The titles of the tests registered so far for `harness` (what `harness.skip` may name). */
export function registeredTests(harness: ConformanceHarness): readonly string[] {
  return [...registry(harness)];
}

/** Thrown by a collected test's scope when the test skips itself. */
class Skipped extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`skipped: ${reason}`);
    this.reason = reason;
  }
}

/**
 * Collects the tests `register` (a sub-suite, or several) would register for `harness`, without
 * registering any with vitest, so that a test can run them itself: the suite's own tests use it
 * to prove that a deliberately broken driver fails a named test. Call it while vitest collects
 * (at the top of a test file or inside `describe`): the sub-suites' `describe` blocks are
 * registered, empty.
 *
 * @example
 * const tests = collectConformanceTests(brokenHarness, transactionsSuite);
 * it("a driver ignoring isolation fails", async () => {
 *   await expect(tests.get('[rowLock] a row lock claim runs at isolation "serializable" …')?.run()).rejects.toThrow();
 * });
 */
export function collectConformanceTests(
  harness: ConformanceHarness,
  register: (harness: ConformanceHarness) => void,
): ReadonlyMap<string, CollectedTest> {
  const previous = collecting;
  const into = new Map<string, CollectedTest>();
  collecting = into;
  try {
    register(harness);
  } finally {
    collecting = previous;
  }
  return into;
}

/**
 * A group of conformance tests: a vitest `describe` named `name`, or, while
 * {@link collectConformanceTests} runs, `register` called at once (vitest runs `describe` bodies
 * later, when nothing would be collecting any more).
 */
export function conformanceGroup(name: string, register: () => void): void {
  if (collecting !== undefined) register();
  else describe(name, register);
}

/**
 * Appends what the test's brokers logged (errors and warnings: a claim loop's failed claims, a
 * failed settlement) to a failing test's message, so the report shows the cause and not only
 * "Timed out after … ms". Returns `error` itself (changed) when it is an `Error`.
 */
export function withLoggedCauses(error: unknown, log: readonly LogEntry[]): unknown {
  if (log.length === 0) return error;
  const shown = log.slice(0, 12).map((entry) => `  - ${entry.level}: ${entry.message}${causeOf(entry)}`);
  if (log.length > shown.length) shown.push(`  - … and ${log.length - shown.length} more`);
  const text = `\nThe brokers of this test logged:\n${shown.join("\n")}`;
  if (error instanceof Error) {
    error.message += text;
    return error;
  }
  return new Error(`${String(error)}${text}`, { cause: error });
}

function causeOf(entry: LogEntry): string {
  const cause = entry.details?.error;
  if (cause === undefined) return "";
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return ` (${cause.name}${typeof code === "string" ? ` ${code}` : ""}: ${cause.message})`;
  }
  return ` (${String(cause)})`;
}

/** Runs one test body with a fresh fixture; cleans up however it ends; failures carry the brokers' log. */
async function runBody(
  harness: ConformanceHarness,
  suite: string,
  scope: TestScope,
  body: (fx: Fixture) => Promise<void>,
): Promise<void> {
  const fx = new Fixture(harness, suite, scope);
  try {
    await body(fx);
  } catch (error) {
    if (error instanceof Skipped) throw error;
    throw withLoggedCauses(error, fx.log);
  } finally {
    await fx.cleanup();
  }
}

/** How one test runs, beyond its body. */
export interface ConformanceTestOptions {
  /** How long the test may run before vitest fails it. Default {@link TEST_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/**
 * Registers one conformance test named `title` (titles are unique across the suite: they are
 * what `harness.skip` names). The body gets a fresh fixture, cleaned up however the body ends.
 */
export function conformanceTest(
  harness: ConformanceHarness,
  suite: string,
  title: string,
  body: (fx: Fixture) => Promise<void>,
  options: ConformanceTestOptions = {},
): void {
  const set = registry(harness);
  if (set.has(title)) throw new Error(`@rowclaim/conformance: two tests are named "${title}".`);
  set.add(title);
  const reason = harness.skip?.[title];
  if (collecting !== undefined) {
    collecting.set(title, {
      title,
      async run() {
        if (reason !== undefined) return { skipped: `opted out by the ${harness.name} harness: ${reason}` };
        const scope: TestScope = {
          name: title,
          skip(why: string): never {
            throw new Skipped(why);
          },
        };
        try {
          await runBody(harness, suite, scope, body);
          return "passed";
        } catch (error) {
          if (error instanceof Skipped) return { skipped: error.reason };
          throw error;
        }
      },
    });
    return;
  }
  if (reason !== undefined) {
    it.skip(`${title} [opted out by the ${harness.name} harness: ${reason}]`, () => {});
    return;
  }
  it(
    title,
    async (ctx) => {
      const scope: TestScope = { name: ctx.task.name, skip: (why: string) => ctx.skip(why) };
      await runBody(harness, suite, scope, body);
    },
    options.timeoutMs ?? TEST_TIMEOUT_MS,
  );
}

/**
 * What is wrong with `harness.skip`, one sentence a problem: an opt-out naming no test registered
 * for `harness` (a renamed or removed test), or one without a reason. Empty when nothing is.
 */
export function optOutProblems(harness: ConformanceHarness): string[] {
  const known = registry(harness);
  const problems: string[] = [];
  for (const [title, reason] of Object.entries(harness.skip ?? {})) {
    if (!known.has(title)) problems.push(`harness.skip names "${title}", which is no test of the suite`);
    if (typeof reason !== "string" || reason.trim() === "")
      problems.push(`the opt-out of "${title}" gives no reason`);
  }
  return problems;
}

/**
 * Registers, once per harness, the check that every opt-out in `harness.skip` names a test of
 * the suite and gives a reason ({@link optOutProblems}), so a stale opt-out is noticed. Every
 * sub-suite calls it; the check runs after collection, so it sees every test registered in the
 * file.
 */
export function optOutCheck(harness: ConformanceHarness): void {
  if (collecting !== undefined || checked.has(harness)) return;
  checked.add(harness);
  describe("opt-outs", () => {
    it("every opt-out names a test of the suite and gives a reason", () => {
      expect(optOutProblems(harness)).toEqual([]);
    });
  });
}
