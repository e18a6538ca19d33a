// Database URLs for rowclaim's own tests.
//
// A URL in the environment wins (ROWCLAIM_POSTGRES_URL, ROWCLAIM_MYSQL_URL). Without one, a
// test starts a throwaway server with testcontainers where a Docker engine answers, and
// otherwise uses the local services this repository's CI starts (.ci/run):
// PostgreSQL at 127.0.0.1:5432 and MariaDB at 127.0.0.1:3306, database `test`.
// Under CI=true a database that does not answer is a failure, never a silent skip: callers
// connect and let the error fail the test.
import { execFile } from "node:child_process";

/** The local defaults (what .ci/run starts). */
export const localUrls = Object.freeze({
  postgres: "postgres://postgres@127.0.0.1:5432/test",
  mysql: "mysql://root@127.0.0.1:3306/test",
});

const envNames = Object.freeze({ postgres: "ROWCLAIM_POSTGRES_URL", mysql: "ROWCLAIM_MYSQL_URL" });

/** @type {Map<string, Promise<{ url: string, stop: () => Promise<void> }>>} */
const started = new Map();

function dockerAnswers() {
  return new Promise((resolve) => {
    execFile("docker", ["info", "--format", "{{.ServerVersion}}"], { timeout: 3000 }, (error, stdout) => {
      resolve(error === null && String(stdout).trim() !== "");
    });
  });
}

async function startContainer(kind) {
  if (kind === "postgres") {
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    const container = await new PostgreSqlContainer("postgres:15").withDatabase("test").start();
    return { url: container.getConnectionUri(), stop: () => container.stop().then(() => undefined) };
  }
  const { MariaDbContainer } = await import("@testcontainers/mariadb");
  const container = await new MariaDbContainer("mariadb:10.11")
    .withDatabase("test")
    .withRootPassword("")
    .start();
  return {
    url: `mysql://root@${container.getHost()}:${container.getPort()}/test`,
    stop: () => container.stop().then(() => undefined),
  };
}

/**
 * The URL of the database of `kind` ("postgres" or "mysql") for tests: the environment's, else a
 * testcontainers server where Docker answers, else the local service.
 *
 * @param {"postgres" | "mysql"} kind
 * @returns {Promise<string>}
 */
export async function databaseUrl(kind) {
  const fromEnv = process.env[envNames[kind]];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  if (!(await dockerAnswers())) return localUrls[kind];
  let pending = started.get(kind);
  if (pending === undefined) {
    pending = startContainer(kind).catch((error) => {
      // "Could not find a working container runtime strategy" and friends: use the local service.
      process.emitWarning(
        `rowclaim tests: testcontainers could not start ${kind} (${error?.message ?? error}); using ${localUrls[kind]}.`,
      );
      return { url: localUrls[kind], stop: async () => {} };
    });
    started.set(kind, pending);
  }
  return (await pending).url;
}

/**
 * Whether this run is the load step (`ROWCLAIM_LOAD=1`, set by tooling/load-check.sh): the
 * longest checks run only there — the conformance heap test on the real databases, the start-up
 * fault tests before every start-up statement, the deepest kill loops and the largest drains —
 * so that `pnpm test` (and CI) stays short.
 */
export const inLoadStep = process.env.ROWCLAIM_LOAD === "1";

/** The claim forms whose start-up fault tests the server databases run (`allForms` of the suite). */
const startupForms = ["rowLock", "lease", "advisory"];

/**
 * The start-up fault tests of the conformance suite (packages/conformance/src/startup.ts) over
 * `scope`: "each start-up statement in turn" (the full loop) or "the first start-up statement of
 * each kind" (the sample).
 *
 * @param {"each start-up statement in turn" | "the first start-up statement of each kind"} scope
 * @returns {string[]}
 */
function startupFaultTests(scope) {
  return startupForms.flatMap((form) => [
    `[${form}] with sessions ended before ${scope}, subscribe (failing fast) rejects with CONNECTION_LOST or starts a working subscription, and no error escapes`,
    `[${form}] with sessions ended before ${scope}, subscribe (retrying) starts the subscription`,
  ]);
}

/**
 * The heap test's opt-out outside the load step, for a real database's conformance run: its
 * 100,000 rows take minutes (one on SQLite, more on a server). The in-memory reference driver
 * runs it in every pnpm test (packages/conformance), so a leak in core is still caught there; a
 * driver's own leak is caught in the load step. Empty in the load step.
 *
 * @returns {Readonly<Record<string, string>>}
 */
export function heapTestOptOut() {
  if (inLoadStep) return {};
  return {
    "[lease] draining 100,000 rows through one subscription keeps the heap flat":
      "runs in the load step (ROWCLAIM_LOAD=1, tooling/load-check.sh); the in-memory reference driver runs it in every pnpm test",
  };
}

/**
 * The conformance opt-outs (`harness.skip`) of the PostgreSQL and MariaDB runs. Outside the load
 * step: the heap test ({@link heapTestOptOut}), and the start-up fault tests before every start-up
 * statement in turn (dozens of statements per form, each ending the pool's sessions), whose sample
 * (the first statement of each kind) runs instead. In the load step: only that sample, since the
 * full loop covers it.
 *
 * @returns {Readonly<Record<string, string>>}
 */
export function loadStepOptOuts() {
  if (inLoadStep) {
    return Object.fromEntries(
      startupFaultTests("the first start-up statement of each kind").map((name) => [
        name,
        "the load step runs the start-up fault tests before every start-up statement in turn, which cover this sample",
      ]),
    );
  }
  return {
    ...heapTestOptOut(),
    ...Object.fromEntries(
      startupFaultTests("each start-up statement in turn").map((name) => [
        name,
        "runs in the load step (ROWCLAIM_LOAD=1, tooling/load-check.sh); the sample before the first start-up statement of each kind runs here",
      ]),
    ),
  };
}
