import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { drainWithoutDatabase } from "./memory-example.js";

describe("the README's example of the in-memory reference driver", () => {
  it("runs: both rows are acked, one settle call each, and the table is empty", async () => {
    expect(await drainWithoutDatabase()).toEqual({ settles: 2, left: 0 });
  });

  it("is what the README shows, line for line", () => {
    const source = readFileSync(new URL("./memory-example.ts", import.meta.url), "utf8");
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const block = /\/\/ usage:start\n([\s\S]*?)\n\s*\/\/ usage:end/.exec(source)?.[1];
    expect(block).toBeDefined();
    const lines = (block ?? "").split("\n").map((line) => line.replace(/^ {2}/, ""));
    expect(readme).toContain(lines.join("\n"));
  });
});
