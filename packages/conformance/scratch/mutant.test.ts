import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Claimer, Driver, PublishRow } from "@rowclaim/core";
import { createSqliteDriver } from "../../sqlite/dist/index.js";
import { runConformance } from "../src/index.js";

const require = createRequire(fileURLToPath(new URL("../../sqlite/package.json", import.meta.url)));
const Database = require("better-sqlite3");
const file = join(mkdtempSync(join(tmpdir(), "scratch-mut-")), "q.db");
const admin = new Database(file, { timeout: 5000 });
admin.pragma("journal_mode = WAL");
const q = (s: string) => `"${s.replaceAll('"', '""')}"`;
const mutation = process.env.MUTATION ?? "";

function mutate(driver: Driver): Driver {
  const open = driver.open.bind(driver);
  const publish = driver.publish.bind(driver);
  return Object.assign(Object.create(driver), {
    capabilities: driver.capabilities,
    name: driver.name,
    dialect: driver.dialect,
    schemaSql: driver.schemaSql.bind(driver),
    close: driver.close.bind(driver),
    publish: (table: never, rows: readonly PublishRow[], o: never) => {
      if (mutation === "corrupt-bytes") {
        rows = rows.map((r) =>
          r.payload instanceof Uint8Array && r.payload.length > 1000
            ? { ...r, payload: r.payload.slice(0, -1) }
            : r,
        );
      }
      return publish(table, rows, o);
    },
    open: async (table: never, o: never) => {
      if (mutation === "no-fifo") table = { ...(table as object), fifo: false } as never;
      const c = (await open(table, o)) as Claimer;
      if (c.form === "lease") {
        const claim = c.claim.bind(c),
          extend = c.extend.bind(c),
          settle = c.settle.bind(c);
        return Object.assign(Object.create(c), {
          form: c.form,
          close: c.close.bind(c),
          claim: async (r: never) => {
            const got = await claim(r);
            if (mutation === "attempt-after")
              return got.map((x) => ({ ...x, row: { ...x.row, attempt: x.row.attempt + 1 } }));
            if (mutation === "double") return [...got, ...got];
            return got;
          },
          extend: async (h: never[], e: Date) =>
            mutation === "no-extend" ? h.map(() => null) : extend(h, e),
          settle: async (id: never, t: never, s: never) => {
            try {
              await settle(id, t, s);
            } catch (err) {
              if (mutation === "swallow-lost") return;
              throw err;
            }
          },
        });
      }
      return c;
    },
  }) as Driver;
}

runConformance({
  name: "mutant",
  createDriver: () => mutate(createSqliteDriver({ filename: file })),
  execute: async (sql) => {
    admin.exec(sql);
  },
  readRows: async (table) =>
    admin.prepare(`SELECT * FROM ${q(table.name)} ORDER BY ${q(table.columns.id)}`).all(),
  dropTable: async (table) => {
    admin.exec(`DROP TABLE IF EXISTS ${q(table.name)}`);
  },
  close: async () => {
    admin.close();
  },
});
