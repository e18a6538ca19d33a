// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the edits are source text of the drivers, template placeholders included.
// Planted driver bugs: each the smallest change a driver author could make by mistake, as
// search/replace edits against the built-in drivers' sources (mostly their SQL builders,
// src/sql.ts). `tests` is the vitest name filter (-t) of the driver's conformance run that the
// runner uses for speed: the sub-suites whose rules the bug breaks. The conformance suite must
// fail at least one of those tests for every entry ("caught").

/** @typedef {{ file: string, search: string, replace: string }} Edit */
/** @typedef {{ name: string, driver: "postgres" | "mysql" | "sqlite", bug: string, edits: Edit[], tests: string }} Mutant */

/** @type {Mutant[]} */
export const mutants = [
  {
    name: "postgres-row-lock-fifo-head",
    driver: "postgres",
    bug: "rowLockClaimSql without its fifoHead condition (the group guard kept)",
    edits: [
      {
        file: "src/sql.ts",
        search: 'if (table.fifo) where += ` AND ${fifoHead(table, group, "rc_src", p)}`;',
        replace: "",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "postgres-lease-fifo-head",
    driver: "postgres",
    bug: 'leaseClaimSql without fifoHead (the "no row of the group in work" condition kept)',
    edits: [
      {
        file: "src/sql.ts",
        search:
          '      where += ` AND ${fifoHead(table, group, "rc_src", p)}`;\n      where += ` AND NOT EXISTS',
        replace: "      where += ` AND NOT EXISTS",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "postgres-advisory-take-without-recheck",
    driver: "postgres",
    bug: "advisoryTakeSql locks the key and takes the row by id and key only (no longer due, unprocessed, not leased)",
    edits: [
      {
        file: "src/sql.ts",
        search: ' = ${p.ref("key")}::text AND ${claimable(table, group, "rc_src", p)}`;',
        replace: ' = ${p.ref("key")}::text`;',
      },
    ],
    tests: "interleavings",
  },
  {
    name: "mysql-row-lock-repeatable-read",
    driver: "mysql",
    bug: "the driver's pool no longer sets READ COMMITTED, and a row lock claim on a table naming no level runs a plain START TRANSACTION (the server's REPEATABLE READ)",
    edits: [
      {
        file: "src/own-pool.ts",
        search:
          "    connection.query(transactionSql.sessionIsolation(OWN_POOL_ISOLATION), (error: unknown) => {\n      if (error === null || error === undefined) markSessionLevel(connection, OWN_POOL_ISOLATION);\n    });",
        replace: "",
      },
      {
        file: "src/row-lock.ts",
        search: 'await beginAt(connection, table.isolation ?? "read committed");',
        replace:
          "await (table.isolation === undefined ? run(connection, transactionSql.begin) : beginAt(connection, table.isolation));",
      },
    ],
    tests: "gaps between",
  },
  {
    name: "postgres-lease-fifo-without-busy-check",
    driver: "postgres",
    bug: 'leaseClaimSql without the "no row of the group in work" condition (the head condition kept)',
    edits: [
      {
        file: "src/sql.ts",
        search:
          '      where += ` AND NOT EXISTS (SELECT 1 FROM ${tableRef(table)} AS rc_busy WHERE ${busy.join(" AND ")})`;',
        replace: "      void busy;",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "postgres-row-lock-fifo-without-guard",
    driver: "postgres",
    bug: "the row lock FIFO guard always reports the group's lock taken (no pg_try_advisory_xact_lock)",
    edits: [
      {
        file: "src/sql.ts",
        search:
          '(p) => `SELECT pg_try_advisory_xact_lock(hashtextextended(${p.ref("key")}::text, 0)) AS locked`,',
        replace: '(p) => `SELECT ${p.ref("key")}::text IS NOT NULL AS locked`,',
      },
    ],
    tests: "interleavings|FIFO",
  },
  {
    name: "postgres-advisory-settlement-keeps-key",
    driver: "postgres",
    bug: "the advisory settle-and-unlock statement settles but never unlocks (the connection goes back to the pool holding the key)",
    edits: [
      {
        file: "src/sql.ts",
        search:
          '`pg_advisory_unlock(hashtextextended(${p.ref("key")}::text, 0)) AS ${quoteIdent(ADVISORY_UNLOCKED_ALIAS)} ` +',
        replace: '`(${p.ref("key")}::text IS NOT NULL) AS ${quoteIdent(ADVISORY_UNLOCKED_ALIAS)} ` +',
      },
    ],
    tests: "server shows its key unlocked",
  },
  {
    name: "postgres-row-lock-without-skip-locked",
    driver: "postgres",
    bug: "the row lock claim locks with FOR UPDATE alone, waiting behind rows locked elsewhere",
    edits: [
      {
        file: "src/sql.ts",
        search:
          '    const lock = table.fifo ? "FOR UPDATE" : "FOR UPDATE SKIP LOCKED";\n    return `SELECT ${selectList(table, types, "rc_src")}',
        replace: '    const lock = "FOR UPDATE";\n    return `SELECT ${selectList(table, types, "rc_src")}',
      },
    ],
    tests: "SKIP LOCKED",
  },
  {
    name: "postgres-claim-order-without-priority",
    driver: "postgres",
    bug: "claim order leaves priority out",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "  if (priority !== undefined) items.push(`${col(alias, priority)} ASC`);\n  if (runAt !== undefined) items.push(`${col(alias, runAt)} ASC NULLS FIRST`);",
        replace: "  if (runAt !== undefined) items.push(`${col(alias, runAt)} ASC NULLS FIRST`);",
      },
    ],
    tests: "claim order is priority",
  },
  {
    name: "postgres-claims-rows-not-due",
    driver: "postgres",
    bug: "the claimable condition leaves runAt out (rows not due yet are claimed)",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "  if (runAt !== undefined)\n    conditions.push(`(${col(alias, runAt)} IS NULL OR ${col(alias, runAt)} <= ${now})`);",
        replace: "",
      },
    ],
    tests: "future runAt",
  },
  {
    name: "postgres-lease-settlement-without-token",
    driver: "postgres",
    bug: "a lease settlement no longer requires the row to hold the delivery's token",
    edits: [
      {
        file: "src/sql.ts",
        search:
          '    if (form === "lease" && lockedUntil !== undefined)\n      conditions.push(`${quoteIdent(lockedUntil)} = ${p.ref("token")}`);',
        replace: "",
      },
    ],
    tests: "LEASE_LOST",
  },
  {
    name: "mysql-advisory-take-without-recheck",
    driver: "mysql",
    bug: "the advisory take updates the row by id only (no longer checking it is still claimable)",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "+ 1 WHERE ${this.#id} = ? AND ${this.#claimable}`,\n    );\n    return { sql: takeSql, values: [id, ...this.#claimableValues(now)] };",
        replace: "+ 1 WHERE ${this.#id} = ?`,\n    );\n    return { sql: takeSql, values: [id] };",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "mysql-fifo-guard-always-taken",
    driver: "mysql",
    bug: "the FIFO group guard reports its GET_LOCK taken without taking it (the head read under it kept)",
    edits: [
      {
        file: "src/sql.ts",
        search: "sql: `SELECT GET_LOCK(${name.sql}, ?) AS \\`locked\\``,",
        replace: "sql: `SELECT (${name.sql}) IS NOT NULL AND ? IS NOT NULL AS \\`locked\\``,",
      },
    ],
    tests: "interleavings|FIFO",
  },
  {
    name: "mysql-lease-fifo-without-busy-check",
    driver: "mysql",
    bug: "the lease FIFO guard never sees a row of the group in work",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "EXISTS (SELECT 1 FROM ${this.target} WHERE ${this.#scope} AND ${lockedUntil} IS NOT NULL AND ${lockedUntil} > ?) FROM",
        replace:
          "EXISTS (SELECT 1 FROM ${this.target} WHERE ${this.#scope} AND ${lockedUntil} IS NOT NULL AND ${lockedUntil} > ? AND 1 = 0) FROM",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "mysql-advisory-key-null-not-empty",
    driver: "mysql",
    bug: "the advisory key renders a NULL column as NULL instead of the empty string",
    edits: [
      {
        file: "src/sql.ts",
        search: "return `COALESCE(CAST(${q(part.column)} AS CHAR), '')`;",
        replace: "return `CAST(${q(part.column)} AS CHAR)`;",
      },
    ],
    tests: "renders as the empty string",
  },
  {
    name: "sqlite-lease-fifo-head",
    driver: "sqlite",
    bug: "the FIFO lease claim takes the group's first due row instead of its head",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "WHERE ${c.id} = (SELECT ${c.id} FROM ${c.table} WHERE ${c.group} IS @group${unfinished} ORDER BY ${claimOrder(c)} LIMIT 1)` +\n    `${due} AND",
        replace:
          "WHERE ${c.id} = (SELECT ${c.id} FROM ${c.table} WHERE ${c.group} IS @group${unfinished}${due} ORDER BY ${claimOrder(c)} LIMIT 1)` +\n    ` AND",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "sqlite-lease-fifo-without-busy-check",
    driver: "sqlite",
    bug: "the FIFO lease claim no longer checks that no row of the group is in work",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "    ` AND NOT EXISTS (SELECT 1 FROM ${c.table} WHERE ${c.group} IS @group${unfinished} AND ${c.lockedUntil} > @now) ${returning(c)}`",
        replace: "    ` ${returning(c)}`",
      },
    ],
    tests: "interleavings",
  },
  {
    name: "sqlite-claims-rows-not-due",
    driver: "sqlite",
    bug: "the claimable condition leaves runAt out (rows not due yet are claimed)",
    edits: [
      {
        file: "src/sql.ts",
        search: "  if (c.runAt !== undefined) parts.push(`(${c.runAt} IS NULL OR ${c.runAt} <= @now)`);",
        replace: "",
      },
    ],
    tests: "future runAt",
  },
  {
    name: "sqlite-lease-settlement-without-token",
    driver: "sqlite",
    bug: "a lease settlement no longer requires the row to hold the delivery's token",
    edits: [
      {
        file: "src/sql.ts",
        search:
          "  if (tokenGuard && c.lockedUntil !== undefined) return `${c.id} = @id AND ${c.lockedUntil} = @token`;",
        replace: "",
      },
    ],
    tests: "LEASE_LOST",
  },
];
