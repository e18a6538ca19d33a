import { defineTable } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { allForms, columnNames, deadLetterDescription, describeTable } from "../src/tables.js";

describe("describeTable describes a valid table in each form", () => {
  it.each(allForms)("takes the %s form with the default roles", (form) => {
    const table = defineTable(describeTable(form, "rc_t_1"));
    expect(table.form).toBe(form);
    expect(table.columns.attempt).toBe(columnNames.attempt);
    expect(table.columns.runAt).toBe(columnNames.runAt);
    expect(table.columns.priority).toBe(columnNames.priority);
  });

  it("gives lease tables a 1 s lease unless told", () => {
    expect(defineTable(describeTable("lease", "rc_t_1")).leaseSeconds).toBe(1);
    expect(defineTable(describeTable("lease", "rc_t_1", { lease: 5 })).leaseSeconds).toBe(5);
  });

  it("starts advisory keys with the table's name", () => {
    const table = defineTable(
      describeTable("advisory", "rc_t_1", { keyColumn: "account", extraColumns: ["account"] }),
    );
    expect(table.advisoryKey?.parts).toEqual([{ literal: "rc_t_1-" }, { column: "account" }]);
  });

  it("includes only the roles asked for", () => {
    const table = defineTable(describeTable("rowLock", "rc_t_1", { roles: [] }));
    expect(table.allColumns).toEqual([columnNames.id, columnNames.payload]);
  });
});

describe("deadLetterDescription describes the dead-letter table of a description", () => {
  it("keeps the columns, renames the table and its key, and drops dead-lettering", () => {
    const source = describeTable("advisory", "rc_t_1", {
      maxAttempts: 2,
      deadLetter: { table: "rc_t_1_dead" },
    });
    const dead = defineTable(deadLetterDescription(source, "rc_t_1_dead"));
    expect(dead.name).toBe("rc_t_1_dead");
    expect(dead.allColumns).toEqual(defineTable(source).allColumns);
    expect(dead.maxAttempts).toBeUndefined();
    expect(dead.deadLetter).toBeUndefined();
    expect(dead.advisoryKey?.source).toBe("rc_t_1_dead-{id}");
  });
});
