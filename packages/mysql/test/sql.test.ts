import { defineTable } from "@rowclaim/core";
import type { PublishRow } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import {
  createTableSql,
  insertStatement,
  lockNameExpression,
  quoteIdentifier,
  TableStatements,
} from "../src/index.js";

const rows: PublishRow[] = [
  {
    payload: '{"a":1}',
    group: "g",
    runAt: new Date(0),
    priority: null,
    headers: null,
    values: { account: 7 },
  },
  {
    payload: new Uint8Array([1, 2]),
    group: null,
    runAt: null,
    priority: 3,
    headers: '{"h":"v"}',
    values: {},
  },
];

const table = defineTable({
  name: "jobs",
  columns: {
    id: "id",
    payload: "payload",
    attempt: "attempt",
    runAt: "run_at",
    priority: "priority",
    group: "queue",
    headers: "headers",
  },
  extraColumns: ["account"],
});

describe("publish SQL differs by server family", () => {
  it("MariaDB returns the ids with INSERT … RETURNING", () => {
    const insert = insertStatement(table, "mariadb", rows);
    expect(insert.sql).toBe(
      "INSERT INTO `jobs` (`payload`, `queue`, `run_at`, `priority`, `headers`, `account`) VALUES (?, ?, ?, DEFAULT, ?, ?), (?, ?, ?, ?, ?, DEFAULT) RETURNING `id`",
    );
    expect(insert.values).toHaveLength(10);
    expect(Buffer.isBuffer(insert.values[5])).toBe(true);
  });

  it("MySQL has no RETURNING: the same multi-row INSERT without it (ids come from insertId)", () => {
    const insert = insertStatement(table, "mysql", rows);
    expect(insert.sql).not.toContain("RETURNING");
    expect(insert.sql).toMatch(/^INSERT INTO `jobs` \(.*\) VALUES \(.*\), \(.*\)$/);
  });
});

describe("claim SQL is the same for both families and built from quoted identifiers", () => {
  it("the row lock claim locks claimable rows in claim order, skipping locked ones", () => {
    const statements = new TableStatements(table, "g");
    const now = new Date();
    const claim = statements.rowLockClaim(now, 5);
    expect(claim.sql).toBe(
      "SELECT `id`, `payload`, `attempt`, `run_at`, `priority`, `queue`, `headers`, `account` FROM `jobs` WHERE `queue` = ? AND (`run_at` IS NULL OR `run_at` <= ?) ORDER BY `priority` ASC, `run_at` ASC, `id` ASC LIMIT ? FOR UPDATE SKIP LOCKED",
    );
    expect(claim.values).toEqual(["g", now, 5]);
  });

  it("a null group claims rows whose group IS NULL", () => {
    const claim = new TableStatements(table, null).rowLockClaim(new Date(), 1);
    expect(claim.sql).toContain("`queue` IS NULL");
  });

  it("the lease claim selects whole rows, then one UPDATE writes the expiry and attempt + 1", () => {
    const lease = defineTable({
      name: "l",
      columns: { id: "id", payload: "p", attempt: "a", lockedUntil: "lu" },
    });
    const statements = new TableStatements(lease, null);
    expect(statements.leaseSelect(new Date(), 2).sql).toBe(
      "SELECT `id`, `p`, `a`, `lu` FROM `l` WHERE (`lu` IS NULL OR `lu` <= ?) ORDER BY `id` ASC LIMIT ? FOR UPDATE SKIP LOCKED",
    );
    expect(statements.leaseTake([1, 2], new Date()).sql).toBe(
      "UPDATE `l` FORCE INDEX (PRIMARY) SET `lu` = ?, `a` = `a` + 1 WHERE `id` IN (?)",
    );
    const settle = statements.settlements({ countAttempt: false, tokenGuard: true });
    expect(settle.delete(1, new Date()).sql).toBe("DELETE FROM `l` WHERE `id` = ? AND `lu` = ?");
    expect(settle.update("release", undefined, 1, new Date())?.sql).toBe(
      "UPDATE `l` SET `lu` = NULL WHERE `id` = ? AND `lu` = ?",
    );
  });

  it("the row lock form counts the attempt in every settlement that keeps the row", () => {
    const settle = new TableStatements(table, null).settlements({ countAttempt: true, tokenGuard: false });
    expect(settle.update("moveToGroup", "dead", 1)?.sql).toBe(
      "UPDATE `jobs` SET `queue` = ?, `attempt` = `attempt` + 1 WHERE `id` = ?",
    );
    expect(settle.moveToTable("jobs_dead", 1).insert.sql).toBe(
      "INSERT INTO `jobs_dead` (`payload`, `attempt`, `run_at`, `priority`, `queue`, `headers`, `account`) SELECT `payload`, `attempt` + 1, `run_at`, `priority`, `queue`, `headers`, `account` FROM `jobs` WHERE `id` = ?",
    );
  });

  it("FIFO guards: one named lock per group, and a head read of one row (NOWAIT in the row lock form)", () => {
    const fifo = defineTable({
      name: "f",
      columns: { id: "id", payload: "p", group: "g", lockedUntil: "lu" },
      fifo: true,
    });
    const statements = new TableStatements(fifo, "a");
    expect(statements.rowLockFifoGuard(new Date()).sql).toBe(
      "SELECT `id`, 1 FROM `f` WHERE `g` = ? ORDER BY `id` ASC LIMIT 1 FOR UPDATE NOWAIT",
    );
    expect(statements.leaseFifoGuard(new Date()).sql).toBe(
      "SELECT `id`, 1, EXISTS (SELECT 1 FROM `f` WHERE `g` = ? AND `lu` IS NOT NULL AND `lu` > ?) FROM `f` WHERE `g` = ? ORDER BY `id` ASC LIMIT 1 FOR UPDATE",
    );
    const lock = statements.fifoGroupLock(0);
    expect(lock.sql).toMatch(/^SELECT GET_LOCK\(IF\(CHAR_LENGTH\(/);
    expect(lock.values).toContain('rowclaim-fifo:f:"a"');
    expect(lock.values.at(-1)).toBe(0);
  });
});

describe("identifiers are backtick-quoted and values never spliced", () => {
  it("doubles embedded backticks", () => {
    expect(quoteIdentifier("a`b")).toBe("`a``b`");
    expect(quoteIdentifier("x; DROP TABLE y; --")).toBe("`x; DROP TABLE y; --`");
  });

  const unquotable: [what: string, name: string][] = [
    ["an empty name", ""],
    ["a name with a NUL character", "a\u0000b"],
    ["a name ending in a space", "trailing "],
    ["a name of 65 characters", "x".repeat(65)],
  ];
  for (const [what, name] of unquotable) {
    it(`refuses ${what} with DECLARATION`, () => {
      expect(() => quoteIdentifier(name)).toThrow(expect.objectContaining({ code: "DECLARATION" }));
    });
  }

  it("the advisory lock name keeps literals as parameters and hashes past 64 characters", () => {
    const advisory = defineTable({
      name: "t",
      columns: { id: "id", payload: "p" },
      extraColumns: ["account"],
      advisoryLock: "acct-'{account}'",
    });
    const name = lockNameExpression(advisory);
    expect(name.sql).not.toContain("acct");
    expect(name.sql).toContain("SHA2(");
    expect(name.sql).toContain("CHAR_LENGTH(");
    expect(name.values).toEqual([null, "acct-'", "'", null, "acct-'", "'", null, "acct-'", "'"]);
  });
});

describe("schemaSql", () => {
  it("creates an InnoDB utf8mb4 table with the claim-order index", () => {
    const sql = createTableSql(table);
    expect(sql).toContain("`id` BIGINT NOT NULL AUTO_INCREMENT");
    expect(sql).toContain("`payload` JSON NOT NULL");
    expect(sql).toContain("`attempt` INT NOT NULL DEFAULT 1");
    expect(sql).toContain("`priority` INT NOT NULL DEFAULT 0");
    expect(sql).toContain("`queue` VARCHAR(191)");
    expect(sql).toContain("KEY `jobs_claim_order` (`queue`, `priority`, `run_at`, `id`)");
    expect(sql).toContain("ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
  });
});

describe("coalesced settlement statements", () => {
  const leased = defineTable({
    name: "jobs",
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      lockedUntil: "locked_until",
      processedAt: "done",
    },
  });
  const token = new Date("2030-01-01T00:00:00Z");
  const held = [
    { id: 1, token },
    { id: "b", token },
  ];

  it("lease: every row fenced by its own token and found by primary key, on MySQL in one statement", () => {
    const lease = new TableStatements(leased, null).settlements({ countAttempt: false, tokenGuard: true });
    const mysqlDelete = lease.ackMany({ kind: "delete" }, held, "mysql");
    expect(mysqlDelete.sql).toBe(
      "DELETE `jobs` FROM `jobs` FORCE INDEX (PRIMARY) WHERE `id` IN (?) AND (`id`, `locked_until`) IN (?)",
    );
    expect(mysqlDelete.values).toEqual([
      [1, "b"],
      [
        [1, token],
        ["b", token],
      ],
    ]);
    const at = new Date(0);
    const mark = lease.ackMany({ kind: "markProcessed", at }, held, "mariadb");
    expect(mark.sql).toBe(
      "UPDATE `jobs` FORCE INDEX (PRIMARY) SET `done` = ?, `locked_until` = NULL WHERE `id` IN (?) AND (`id`, `locked_until`) IN (?)",
    );
    expect(mark.values[0]).toBe(at);
    expect(lease.lockHeld(held).sql).toBe(
      "SELECT `id` FROM `jobs` FORCE INDEX (PRIMARY) WHERE `id` IN (?) AND (`id`, `locked_until`) IN (?) FOR UPDATE",
    );
  });

  it("lease, MariaDB: a delete per row, returning its id, in one compound statement and one transaction", () => {
    const lease = new TableStatements(leased, null).settlements({ countAttempt: false, tokenGuard: true });
    const bound = lease.deleteManyReturning(held);
    const one = "DELETE FROM `jobs` WHERE `id` = ? AND `locked_until` = ? RETURNING `id`;";
    expect(bound.sql).toBe(
      `BEGIN NOT ATOMIC DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END; START TRANSACTION; ${one} ${one} COMMIT; END`,
    );
    expect(bound.values).toEqual([1, token, "b", token]);
  });

  it("row lock: the ids alone; marking processed counts the attempt; MariaDB deletes row by row", () => {
    const rowLock = new TableStatements(leased, null).settlements({ countAttempt: true, tokenGuard: false });
    expect(rowLock.ackMany({ kind: "delete" }, held, "mysql").sql).toBe(
      "DELETE `jobs` FROM `jobs` FORCE INDEX (PRIMARY) WHERE `id` IN (?)",
    );
    expect(rowLock.ackMany({ kind: "delete" }, held, "mysql").values).toEqual([[1, "b"]]);
    expect(rowLock.ackSteps({ kind: "delete" }, held, "mariadb")).toEqual({
      statements: ["DELETE FROM `jobs` WHERE `id` = ?", "DELETE FROM `jobs` WHERE `id` = ?"],
      values: [1, "b"],
    });
    expect(rowLock.ackMany({ kind: "delete" }, held, "mariadb").sql).toBe(
      "BEGIN NOT ATOMIC DELETE FROM `jobs` WHERE `id` = ?; DELETE FROM `jobs` WHERE `id` = ?; END",
    );
    expect(rowLock.ackMany({ kind: "markProcessed", at: new Date(0) }, held, "mariadb").sql).toBe(
      "UPDATE `jobs` FORCE INDEX (PRIMARY) SET `done` = ?, `locked_until` = NULL, `attempt` = `attempt` + 1 WHERE `id` IN (?)",
    );
  });

  it("lease extension: one statement for every row, each fenced by its own token, found by primary key", () => {
    const statements = new TableStatements(leased, null);
    const expiry = new Date("2030-01-02T00:00:00Z");
    const extend = statements.leaseExtend(held as { id: unknown; token: Date }[], expiry);
    expect(extend.sql).toBe(
      "UPDATE `jobs` FORCE INDEX (PRIMARY) SET `locked_until` = ? WHERE `id` IN (?) AND (`id`, `locked_until`) IN (?)",
    );
    expect(extend.values).toEqual([
      expiry,
      [1, "b"],
      [
        [1, token],
        ["b", token],
      ],
    ]);
    expect(statements.leaseHolding([1, "b"], expiry)).toEqual({
      sql: "SELECT `id` FROM `jobs` FORCE INDEX (PRIMARY) WHERE `id` IN (?) AND `locked_until` = ?",
      values: [[1, "b"], expiry],
    });
  });

  it("advisory: the delete releases the lock last in its condition", () => {
    const advisory = new TableStatements(leased, null).settlements({
      countAttempt: false,
      tokenGuard: false,
      unfinishedGuard: true,
    });
    const bound = advisory.deleteAndUnlock(7, "test.k7");
    expect(bound.sql).toBe("DELETE FROM `jobs` WHERE `id` = ? AND `done` IS NULL AND RELEASE_LOCK(?) = 1");
    expect(bound.values).toEqual([7, "test.k7"]);
  });
});

describe("locking claims name the claim-order index, so that InnoDB locks only the rows they return", () => {
  it("puts FORCE INDEX with the quoted index name in the row lock and lease claims when the table has one", () => {
    const statements = new TableStatements(table, "g", "jobs_claim_order");
    expect(statements.rowLockClaim(new Date(), 3).sql).toContain(
      "FROM `jobs` FORCE INDEX (`jobs_claim_order`) WHERE",
    );
    expect(statements.leaseSelect(new Date(), 3).sql).toContain(
      "FROM `jobs` FORCE INDEX (`jobs_claim_order`) WHERE",
    );
  });

  it("names no index when the table has none", () => {
    const statements = new TableStatements(table, "g");
    expect(statements.rowLockClaim(new Date(), 3).sql).not.toContain("FORCE INDEX");
  });
});
