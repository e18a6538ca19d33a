/**
 * The plans the server makes for the statements that name rows by a list of ids (coalesced acks,
 * the lease claim's update, lease extension and its read back, the lease form's locking read of
 * held rows): each finds the rows by primary key, on a table of 10 rows as on one of 3,000. A
 * scan of the whole table (which the optimizer picks for `id IN (…)` once the table is small)
 * would lock or wait on rows other batches hold, and two batches would deadlock on their acks.
 */
import { defineTable, type TableDefinition } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { type Bound, TableStatements } from "../src/sql.js";
import { leaseColumns, quote, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture();

const columns = { ...leaseColumns, processedAt: "processed_at" };

/** How the server reads the table for `bound` (EXPLAIN's access type and key, one per table read). */
async function accessOf(bound: Bound): Promise<{ type: unknown; key: unknown }[]> {
  const [rows] = await db.admin.query(`EXPLAIN ${bound.sql}`, bound.values);
  return (rows as { type: unknown; key: unknown }[]).map(({ type, key }) => ({ type, key }));
}

async function tableOf(count: number): Promise<TableDefinition> {
  const table = defineTable({ name: uniqueName("plans"), columns });
  await db.tables.create({ name: table.name, columns });
  const token = new Date("2030-01-01T00:00:00Z");
  for (let start = 0; start < count; start += 1000) {
    const tuples = Array.from({ length: Math.min(1000, count - start) }, () => "('{}', ?)");
    await db.admin.query(
      `INSERT INTO ${quote(table.name)} (payload, locked_until) VALUES ${tuples.join(", ")}`,
      tuples.map(() => token),
    );
  }
  await db.admin.query(`ANALYZE TABLE ${quote(table.name)}`);
  return table;
}

describe("statements that name rows by a list of ids find them by primary key whatever the table's size", () => {
  it.each([10, 3000])("on a table of %i rows: no statement scans the table", async (count) => {
    const table = await tableOf(count);
    const statements = new TableStatements(table, null);
    const token = new Date("2030-01-01T00:00:00Z");
    const held = Array.from({ length: 104 }, (_, n) => ({ id: 1 + n * 3, token }));
    const ids = held.map((row) => row.id);
    const lease = statements.settlements({ countAttempt: false, tokenGuard: true });
    const rowLock = statements.settlements({ countAttempt: true, tokenGuard: false });
    const markProcessed = { kind: "markProcessed", at: new Date() } as const;
    const expiry = new Date("2030-01-02T00:00:00Z");
    const bounds: [string, Bound][] = [
      ["the lease claim's update", statements.leaseTake(ids, expiry)],
      ["the lease extension", statements.leaseExtend(held, expiry)],
      ["the lease extension's read back", statements.leaseHolding(ids, expiry)],
      ["the lease form's locking read of held rows", lease.lockHeld(held)],
      ["a lease coalesced mark as processed", lease.ackMany(markProcessed, held, "mariadb")],
      ["a row lock coalesced mark as processed", rowLock.ackMany(markProcessed, held, "mariadb")],
    ];
    // MariaDB deletes row by row (its DELETE takes no index hint): each step finds its one row.
    for (const [what, steps] of [
      ["a row lock coalesced delete's step", rowLock.ackSteps({ kind: "delete" }, held, "mariadb")],
      ["a lease coalesced delete's step", lease.ackSteps({ kind: "delete" }, held, "mariadb")],
    ] as const) {
      const perRow = steps.values.length / held.length;
      bounds.push([what, { sql: steps.statements[0] ?? "", values: steps.values.slice(0, perRow) }]);
    }
    for (const [what, bound] of bounds) {
      const access = await accessOf(bound);
      expect({ what, access }).toEqual({
        what,
        access: [{ type: expect.stringMatching(/^(range|const|eq_ref)$/), key: "PRIMARY" }],
      });
    }
  });
});
