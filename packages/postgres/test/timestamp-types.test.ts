/**
 * The driver's own pools read `timestamp with time zone` with a parser of their own: it returns
 * the `Date` `pg`'s `postgres-date` returns for every text PostgreSQL prints, hands any other
 * text to `postgres-date`, and steps aside where an application replaced `pg`'s parser.
 */
import { createRequire } from "node:module";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver } from "../src/index.js";
import { driverTypeParsers, readTimestamptz, type TypeParsers } from "../src/timestamp-types.js";
import { testUrl } from "./helpers.js";

const requireHere = createRequire(import.meta.url);
const postgresDate = createRequire(createRequire(requireHere.resolve("pg")).resolve("pg-types"))(
  "postgres-date",
) as (text: string) => unknown;

const pad = (value: number, width: number): string => String(value).padStart(width, "0");

/** A timestamp as PostgreSQL prints it in ISO `DateStyle`, from seeded random parts. */
function printed(random: () => number): string {
  const year = 1000 + Math.floor(random() * 9000);
  const fraction = Math.floor(random() * 7);
  const digits = fraction === 0 ? "" : `.${pad(Math.floor(random() * 10 ** fraction), fraction)}`;
  const zone = Math.floor(random() * 4);
  const hours = pad(Math.floor(random() * 15), 2);
  const sign = random() < 0.5 ? "+" : "-";
  const offset =
    zone === 0
      ? "+00"
      : zone === 1
        ? `${sign}${hours}`
        : zone === 2
          ? `${sign}${hours}:${pad(Math.floor(random() * 60), 2)}`
          : `${sign}${hours}:${pad(Math.floor(random() * 60), 2)}:${pad(Math.floor(random() * 60), 2)}`;
  const date = `${year}-${pad(1 + Math.floor(random() * 12), 2)}-${pad(1 + Math.floor(random() * 28), 2)}`;
  const time = `${pad(Math.floor(random() * 24), 2)}:${pad(Math.floor(random() * 60), 2)}:${pad(Math.floor(random() * 60), 2)}`;
  return `${date} ${time}${digits}${offset}`;
}

/** A small seeded generator, so that a failure repeats. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe("reading timestamp with time zone", () => {
  it("gives the Date postgres-date gives for every shape PostgreSQL prints", () => {
    const random = seeded(26);
    for (let index = 0; index < 5_000; index += 1) {
      const text = printed(random);
      const read = readTimestamptz(text);
      expect(read, text).toBeInstanceOf(Date);
      expect(read?.getTime(), text).toBe((postgresDate(text) as Date).getTime());
    }
  });

  it("gives every fraction of a second as postgres-date truncates it", () => {
    for (const digits of ["0", "5", "29", "999", "1234", "99999", "999999", "000001", "123456"]) {
      const text = `2026-12-03 12:49:41.${digits}+00`;
      expect(readTimestamptz(text)?.getTime(), text).toBe((postgresDate(text) as Date).getTime());
    }
  });

  it("counts leap days and the ends of years and centuries as postgres-date does", () => {
    for (const text of [
      "2024-02-29 23:59:59.999999+00",
      "2000-02-29 00:00:00+00",
      "1900-02-28 12:00:00-01",
      "1900-03-01 00:00:00+14",
      "1970-01-01 00:00:00+00",
      "1969-12-31 23:59:59.999+00",
      "1000-01-01 00:00:00-14:59:59",
      "9999-12-31 23:59:59.999999+00",
      "2100-12-31 23:59:59+05:30",
    ]) {
      expect(readTimestamptz(text)?.getTime(), text).toBe((postgresDate(text) as Date).getTime());
    }
  });

  it("leaves every other text to postgres-date", () => {
    for (const text of [
      "infinity",
      "-infinity",
      "0044-03-15 12:00:00+00 BC",
      "0099-01-01 00:00:00+00",
      "10000-01-01 00:00:00+00",
      "2026-12-03 12:49:41",
      "2026-12-03 12:49:41.1234567+00",
      "2026-12-03 12:49:41+0530",
      "2026-12-03 12:49:41Z",
      "2026-12-03T12:49:41+00",
      "2026-12-03",
      "03/12/2026 12:49:41 UTC",
    ]) {
      expect(readTimestamptz(text), text).toBeUndefined();
    }
  });

  it("steps aside where the application replaced pg's timestamp parser", () => {
    const own = (text: string): string => `own:${text}`;
    const registry: TypeParsers = {
      getTypeParser: (oid) => (oid === 1184 ? own : pg.types.getTypeParser(oid, "text")),
    };
    expect(driverTypeParsers(registry).getTypeParser(1184, "text")).toBe(own);
    expect(driverTypeParsers(pg.types).getTypeParser(1184, "text")).not.toBe(postgresDate);
    expect(driverTypeParsers(pg.types).getTypeParser(23, "text")).toBe(pg.types.getTypeParser(23, "text"));
  });

  it("gives a Date of its own for each value, also for a text read just before", () => {
    const parse = driverTypeParsers(pg.types).getTypeParser(1184, "text") as (text: string) => unknown;
    const text = "2026-12-03 12:49:41.123456+00";
    const first = parse(text) as Date;
    const second = parse(text) as Date;
    expect(second).not.toBe(first);
    expect(second.getTime()).toBe((postgresDate(text) as Date).getTime());
    first.setTime(0);
    expect((parse(text) as Date).getTime()).toBe((postgresDate(text) as Date).getTime());
    expect(parse("infinity")).toBe(Number.POSITIVE_INFINITY);
    expect((parse(text) as Date).getTime()).toBe((postgresDate(text) as Date).getTime());
  });
});

describe("a driver that makes its own pool", () => {
  let driver: ReturnType<typeof createPostgresDriver>;
  let pool: pg.Pool;
  beforeAll(async () => {
    driver = createPostgresDriver({ url: await testUrl(), max: 1 });
    pool = driver.pool as pg.Pool;
  });
  afterAll(async () => {
    await driver.close();
  });

  it("reads timestamps with time zone as pg does, in any session time zone", async () => {
    const client = await pool.connect();
    try {
      for (const zone of ["UTC", "Asia/Kolkata", "America/St_Johns", "Europe/Amsterdam"]) {
        await client.query(`SET TIME ZONE '${zone}'`);
        const { rows } = await client.query<{ at: Date; text: string; never: unknown }>(
          "SELECT v AS at, v::text AS text, 'infinity'::timestamptz AS never FROM (VALUES ('2026-12-03 12:49:41.123456+00'::timestamptz), ('1901-12-13 20:45:52.5+00'::timestamptz), ('0044-03-15 12:00:00+00 BC'::timestamptz)) AS t(v)",
        );
        expect(rows).toHaveLength(3);
        for (const row of rows) {
          expect(row.at).toBeInstanceOf(Date);
          expect(row.at.getTime(), `${zone}: ${row.text}`).toBe((postgresDate(row.text) as Date).getTime());
          expect(row.never).toBe(Number.POSITIVE_INFINITY);
        }
      }
    } finally {
      await client.query("RESET TIME ZONE").catch(() => undefined);
      client.release();
    }
  });
});
