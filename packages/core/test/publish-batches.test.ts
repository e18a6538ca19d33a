import { describe, expect, it } from "vitest";
import { rowsPerStatement, StatementCache, statementChunks } from "../src/publish-batches.js";

describe("rowsPerStatement", () => {
  it("fits as many rows as the parameter limit allows", () => {
    expect(rowsPerStatement(5, 60_000)).toBe(12_000);
    expect(rowsPerStatement(7, 60_000)).toBe(8_571);
  });

  it("stops at the row cap when one is given", () => {
    expect(rowsPerStatement(4, 32_766, 500)).toBe(500);
    expect(rowsPerStatement(100, 32_766, 500)).toBe(327);
  });

  it("carries at least one row, and counts a row of no parameters as one", () => {
    expect(rowsPerStatement(70_000, 60_000)).toBe(1);
    expect(rowsPerStatement(0, 10)).toBe(10);
  });
});

describe("statementChunks", () => {
  it("cuts rows in order into slices of at most the size", () => {
    expect(statementChunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(statementChunks([1, 2], 5)).toEqual([[1, 2]]);
  });

  it("makes no statement of no rows", () => {
    expect(statementChunks([], 3)).toEqual([]);
  });
});

describe("StatementCache", () => {
  it("builds a shape once and gives the kept statement after", () => {
    const cache = new StatementCache<string>(4);
    let builds = 0;
    const build = () => {
      builds += 1;
      return `statement ${builds}`;
    };
    expect(cache.get("a", build)).toBe("statement 1");
    expect(cache.get("a", build)).toBe("statement 1");
    expect(builds).toBe(1);
  });

  it("past its capacity lets go of the statement built first", () => {
    const cache = new StatementCache<string>(2);
    cache.get("a", () => "A");
    cache.get("b", () => "B");
    cache.get("c", () => "C");
    expect(cache.size).toBe(2);
    expect(cache.get("b", () => "B again")).toBe("B");
    expect(cache.get("c", () => "C again")).toBe("C");
    expect(cache.get("a", () => "A again")).toBe("A again");
  });
});
