import { ServerTooOldError } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { parseServerVersion } from "../src/index.js";
import { assertFloor, meetsFloor } from "../src/version.js";

describe("VERSION() parsing and the version floor", () => {
  const cases: [
    text: string,
    family: "mysql" | "mariadb",
    version: [number, number, number],
    accepted: boolean,
  ][] = [
    ["8.0.0", "mysql", [8, 0, 0], false],
    ["8.0.1", "mysql", [8, 0, 1], true],
    ["8.4.0", "mysql", [8, 4, 0], true],
    ["9.1.0-commercial", "mysql", [9, 1, 0], true],
    ["5.7.44-log", "mysql", [5, 7, 44], false],
    ["10.5.23-MariaDB", "mariadb", [10, 5, 23], false],
    ["10.6.0-MariaDB-1:10.6.0+maria~focal", "mariadb", [10, 6, 0], true],
    ["10.11.19-MariaDB-0+deb12u1", "mariadb", [10, 11, 19], true],
    ["11.4.2-MariaDB", "mariadb", [11, 4, 2], true],
    ["5.5.5-10.6.12-MariaDB", "mariadb", [10, 6, 12], true],
    ["5.5.5-10.5.9-MariaDB-log", "mariadb", [10, 5, 9], false],
  ];

  for (const [text, family, [major, minor, patch], accepted] of cases) {
    const reads = `${family === "mysql" ? "MySQL" : "MariaDB"} ${major}.${minor}.${patch}`;
    it(`"${text}" reads as ${reads}, which the floor ${accepted ? "accepts" : "refuses"}`, () => {
      const version = parseServerVersion(text);
      expect(version).toMatchObject({ family, major, minor, patch, text });
      expect(meetsFloor(version)).toBe(accepted);
    });
  }

  it("a server below the floor stops with SERVER_TOO_OLD naming the family, its version and the floor", () => {
    const error = (() => {
      try {
        assertFloor(parseServerVersion("10.5.23-MariaDB"), "jobs");
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ServerTooOldError);
    expect(error).toMatchObject({
      code: "SERVER_TOO_OLD",
      serverVersion: "10.5.23-MariaDB",
      floor: "MariaDB 10.6.0",
    });
    expect(() => assertFloor(parseServerVersion("8.0.0"), "jobs")).toThrow(
      expect.objectContaining({ code: "SERVER_TOO_OLD", floor: "MySQL 8.0.1" }),
    );
  });

  it("a text without a version number is refused", () => {
    expect(() => parseServerVersion("unknown")).toThrow();
  });
});
