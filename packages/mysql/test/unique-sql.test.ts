import { defineTable } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { createTableSql } from "../src/sql.js";
import { addUniqueKeySql, uniqueHolder, uniqueInsert } from "../src/unique-sql.js";

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", runAt: "run_at", lockedUntil: "locked_until", key: "job_key" },
});
const row = { payload: "{}", group: null, runAt: new Date(0), priority: null, headers: null, values: {} };

describe("unique jobs SQL (the same text on MySQL 8 and MariaDB)", () => {
  it("creates the key column with a plain unique key: no partial index, no generated column", () => {
    const ddl = createTableSql(table);
    expect(ddl).toContain("`job_key` VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL");
    expect(ddl).toContain("UNIQUE KEY `jobs_key` (`job_key`)");
    expect(addUniqueKeySql(table)).toBe("ALTER TABLE `jobs` ADD UNIQUE KEY `jobs_key` (`job_key`);");
  });

  it("inserts without RETURNING and reports the holder's id through LAST_INSERT_ID", () => {
    const insert = uniqueInsert(table, row, "k");
    expect(insert.sql).toBe("INSERT INTO `jobs` (`payload`, `run_at`, `job_key`) VALUES (?, ?, ?)");
    expect(insert.sql).not.toContain("RETURNING");
    expect(uniqueHolder(table, row, "k", false).sql).toBe(
      "UPDATE `jobs` SET `id` = LAST_INSERT_ID(`id`) WHERE `job_key` = ?",
    );
    expect(uniqueHolder(table, row, "k", true).sql).toBe(
      "UPDATE `jobs` SET `payload` = ?, `run_at` = ?, `id` = LAST_INSERT_ID(`id`) WHERE `job_key` = ?",
    );
  });
});
