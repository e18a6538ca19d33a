/**
 * Array parameters of coalesced settlements and extensions: `pg` renders each distinct element
 * once (every token of one claim is the same `Date`), into the literal it would have sent for
 * the plain array, and PostgreSQL reads the values back as given.
 */
import { createRequire } from "node:module";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArrayParam } from "../src/array-param.js";
import { testUrl } from "./helpers.js";

/** pg's own renderer of parameter values, to compare against. */
const { prepareValue } = createRequire(import.meta.url)("pg/lib/utils.js") as {
  readonly prepareValue: (value: unknown) => unknown;
};

/** `prepareValue`, counting its calls. */
function countingRender(): { readonly render: (value: unknown) => unknown; readonly calls: () => number } {
  let calls = 0;
  return {
    render: (value) => {
      calls += 1;
      return prepareValue(value);
    },
    calls: () => calls,
  };
}

describe("an array parameter renders each distinct element once", () => {
  it("renders the tokens of one claim (one Date) once, whatever their number", () => {
    const expiry = new Date("2026-01-02T03:04:05.678Z");
    const counting = countingRender();
    const literal = new ArrayParam(Array.from({ length: 500 }, () => expiry)).toPostgres(counting.render);
    expect(counting.calls()).toBe(1);
    expect(literal).toBe(prepareValue(Array.from({ length: 500 }, () => expiry)));
  });

  it("renders Dates of one instant once, and each other instant on its own", () => {
    const counting = countingRender();
    const values = [new Date(1000), new Date(1000), new Date(2000), new Date(1000)];
    const literal = new ArrayParam(values).toPostgres(counting.render);
    expect(counting.calls()).toBe(3);
    expect(literal).toBe(prepareValue(values));
  });

  it("writes the literal pg writes for ids: numbers, bigint text, quotes, backslashes, nulls", () => {
    const values = [1, "9007199254740993", 'a"b', "c\\d", null, "", "x,y", "{z}"];
    expect(new ArrayParam(values).toPostgres(prepareValue)).toBe(prepareValue(values));
  });

  it("writes the literal pg writes for no element, one, nulls only and runs broken by nulls", () => {
    const at = new Date(1000);
    for (const values of [[], ["7"], [null, null], [null, "7", "7"], [at, null, at], ["7", "7", "8"]]) {
      expect(new ArrayParam(values).toPostgres(prepareValue), JSON.stringify(values)).toBe(
        prepareValue(values),
      );
    }
  });
});

describe("PostgreSQL reads an array parameter as the values given", () => {
  let pool: pg.Pool;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await testUrl(), max: 1 });
  });
  afterAll(() => pool.end());

  it("reads text ids, bytea ids and timestamps back unchanged", async () => {
    const ids = ["1", 'a"b', "c\\d", "", "x,y"];
    const bytes = [Buffer.from([0, 1, 254]), Buffer.from("rowclaim")];
    const at = new Date("2026-01-02T03:04:05.678Z");
    const result = await pool.query<{ ids: string[]; bytes: Buffer[]; tokens: Date[] }>(
      "SELECT $1::text[] AS ids, $2::bytea[] AS bytes, $3::timestamptz[] AS tokens",
      [new ArrayParam(ids), new ArrayParam(bytes), new ArrayParam([at, at, new Date(0)])],
    );
    const row = result.rows[0];
    expect(row?.ids).toEqual(ids);
    expect(row?.bytes.map((value) => [...value])).toEqual(bytes.map((value) => [...value]));
    expect(row?.tokens.map((value) => value.getTime())).toEqual([at.getTime(), at.getTime(), 0]);
  });
});
