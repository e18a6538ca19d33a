// A reserved postgres.js connection whose backend the server ended: postgres.js 3.4.9 never
// answers a statement sent on it (it writes to no socket, and throws out of reach). The adapter
// must fail the statement with a lost-connection error instead, and leave the pool usable.
import { isConnectionLost } from "@rowclaim/postgres/executor";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import postgres from "postgres";
import { afterAll, describe, expect, test, vi } from "vitest";
import { poolOf } from "../src/executor.js";

const url = await databaseUrl("postgres");
const admin = postgres(url, { max: 1, onnotice: () => {} });
afterAll(() => admin.end({ timeout: 5 }));

/** A pool of one connection, the number of its connections that closed, and its backends' pids. */
function poolOfOne(appName: string) {
  let closed = 0;
  const sql = postgres(url, {
    max: 1,
    connection: { application_name: appName },
    onnotice: () => {},
    onclose: () => {
      closed += 1;
    },
  });
  const pids = async (): Promise<number[]> =>
    (await admin.unsafe("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [appName])).map(
      (row) => Number(row.pid),
    );
  return { sql, pool: poolOf(sql), closed: () => closed, pids };
}

describe("a reserved connection whose backend ended", () => {
  test.each([
    ["with parameters", { text: "SELECT $1::int AS one", values: [1] }],
    ["without parameters", { text: "SELECT 1 AS one" }],
  ])(
    "fails a statement %s as a lost connection, lets no error escape, and the pool serves the next one",
    async (_, config) => {
      const escaped: unknown[] = [];
      const record = (error: unknown): void => {
        escaped.push(error);
      };
      process.on("uncaughtException", record);
      const { sql, pool, closed, pids } = poolOfOne(
        `rcj_reserved_${Math.random().toString(36).slice(2, 10)}`,
      );
      try {
        const client = await pool.connect();
        await vi.waitFor(async () => expect(await pids()).toHaveLength(1));
        await admin.unsafe("SELECT pg_terminate_backend(pid, 5000) FROM unnest($1::int[]) AS pid", [
          await pids(),
        ]);
        await vi.waitFor(() => expect(closed()).toBe(1));
        const error = await client.query(config).then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isConnectionLost(error), String(error)).toBe(true);
        client.release(error instanceof Error ? error : true);
        expect((await pool.query({ text: "SELECT $1::int AS two", values: [2] })).rows).toEqual([{ two: 2 }]);
        const next = await pool.connect();
        expect((await next.query({ text: "SELECT $1::int AS three", values: [3] })).rows).toEqual([
          { three: 3 },
        ]);
        next.release();
        expect(escaped).toEqual([]);
      } finally {
        process.off("uncaughtException", record);
        await sql.end({ timeout: 5 });
      }
    },
  );
});
