// The dashboard in headless Chromium over a PostgreSQL, a MariaDB and a SQLite table: counts
// that change while a broker drains, search by payload text, redrive of dead rows, pause and
// resume (claims checked in the database), and the refusals (no credentials, read-only user,
// no CSRF token). With ROWCLAIM_DASHBOARD_SCREENSHOTS=1 the SQLite run writes the README's
// screenshots to docs/.
import { join } from "node:path";
import {
  ack,
  type Broker,
  createBroker,
  type Driver,
  deadLetter,
  type RowId,
  type Subscription,
  silentLogger,
} from "@rowclaim/core";
import type { ControlStore } from "@rowclaim/core/driver";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDashboard } from "../src/index.js";
import { basicHeader, launchBrowser, serve } from "./browser.js";
import { type DatabaseKind, openDatabase, type TestDatabase } from "./databases.js";
import { waitFor } from "./support.js";

const ADMIN = basicHeader("ops", "admin-password");
const READER = basicHeader("viewer", "read-password");
const screenshots = process.env.ROWCLAIM_DASHBOARD_SCREENSHOTS === "1";
const docs = join(import.meta.dirname, "..", "docs");

/** A driver whose control-store reads are counted: each read is one look at the pause state. */
function countingReads(driver: Driver): { driver: Driver; reads: () => number } {
  let reads = 0;
  const store = driver.controls as ControlStore;
  const counted: ControlStore = new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === "read" && typeof value === "function")
        return (...args: unknown[]) => {
          reads += 1;
          return (value as (...given: unknown[]) => unknown).apply(target, args);
        };
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  const wrapped = new Proxy(driver, {
    get(target, property) {
      if (property === "controls") return counted;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  return { driver: wrapped, reads: () => reads };
}

const kinds: readonly DatabaseKind[] = ["sqlite", "postgres", "mysql"];

describe.each(kinds)("the dashboard in Chromium over a %s table", (kind) => {
  let db: TestDatabase;
  let publisher: Broker;
  let worker: Broker;
  let reads: () => number;
  let subscription: Subscription | undefined;
  let browser: { context: BrowserContext; close(): Promise<void> };
  let server: { origin: string; close(): Promise<void> };
  let page: Page;
  /** Poison rows are dead-lettered while this is true. */
  let poisonKills = true;
  const handled: RowId[] = [];

  beforeAll(async () => {
    db = await openDatabase(kind, "browser");
    publisher = createBroker({ driver: db.driver(), logger: silentLogger });
    const counted = countingReads(db.driver());
    reads = counted.reads;
    worker = createBroker({ driver: counted.driver, logger: silentLogger });
    const dashboard = createDashboard({
      driver: db.driver(),
      tables: [db.table],
      auth: {
        basic: [
          { username: "ops", password: "admin-password", role: "admin" },
          { username: "viewer", password: "read-password", role: "read" },
        ],
      },
      countsTtlMs: 0,
      refreshMs: 250,
      batchSize: 2,
    });
    server = await serve(dashboard);
    browser = await launchBrowser();
    await browser.context.setExtraHTTPHeaders({ authorization: ADMIN });
    page = await browser.context.newPage();
    page.on("dialog", (dialog) => void dialog.accept());
  });

  afterAll(async () => {
    await subscription?.stop();
    await browser?.close();
    await server?.close();
    await worker?.close();
    await publisher?.close();
    await db?.close();
  });

  const tableUrl = (query = "") => `${server.origin}/tables/${db.table.name}${query}`;
  const card = (state: string) => page.locator(`.card.${state} .value`).first();

  async function startWorker(): Promise<void> {
    subscription = await worker.subscribe(
      db.table,
      async (delivery) => {
        const payload = delivery.payload as { poison?: boolean };
        if (payload.poison === true && poisonKills) return deadLetter();
        handled.push(delivery.id);
        return ack();
      },
      { workers: 2, pollInterval: 100 },
    );
  }

  it("shows the counts, and sees them change while a broker drains the table", async () => {
    await publisher.publishMany(
      db.table,
      Array.from({ length: 12 }, (_, index) => ({ payload: { order: `drain-${index}` } })),
    );
    await page.goto(`${server.origin}/`);
    await expect.poll(() => card("due").textContent()).toBe("12");
    if (screenshots) await page.screenshot({ path: join(docs, "overview.png"), fullPage: true });
    await startWorker();
    // The page refreshes its counts in place (no reload): wait until the drain shows.
    await expect.poll(() => card("due").textContent(), { timeout: 20_000 }).toBe("0");
    await expect.poll(() => card("processed").textContent(), { timeout: 20_000 }).toBe("12");
  });

  it("finds a row by payload text", async () => {
    const needle = `needle-${Math.random().toString(36).slice(2, 8)}`;
    await subscription?.stop();
    subscription = undefined;
    const [id] = await publisher.publishMany(db.table, [
      { payload: { order: "hay-1" } },
      { payload: { order: needle, customer: "Ana" }, headers: { trace: "t-1" } },
      { payload: { order: "hay-2" } },
    ]);
    void id;
    await page.goto(tableUrl());
    await page.fill('input[name="q"]', needle);
    await page.press('input[name="q"]', "Enter");
    await page.waitForURL(/q=needle-/);
    const rows = page.locator("table.rows tbody tr").filter({ hasText: needle });
    await expect.poll(() => rows.count()).toBe(1);
    await expect.poll(() => page.locator("table.rows tbody tr td.preview").count()).toBe(1);
    if (screenshots) await page.screenshot({ path: join(docs, "search.png"), fullPage: true });
    await rows.locator("a").first().click();
    await expect.poll(() => page.locator("pre[data-payload]").textContent()).toContain(needle);
    if (screenshots) await page.screenshot({ path: join(docs, "row.png"), fullPage: true });
    await startWorker();
    await waitFor("the search rows to be processed", async () => {
      const left = await db.query(`SELECT id FROM ${db.quoted} WHERE processed_at IS NULL`);
      return left.length === 0;
    });
  });

  it("redrives dead rows and sees them handled", async () => {
    const ids = await publisher.publishMany(
      db.table,
      Array.from({ length: 3 }, (_, index) => ({ payload: { poison: true, index } })),
    );
    const idList = ids.map((value) => String(value)).join(",");
    await waitFor("the poison rows to be dead-lettered", async () => {
      const dead = await db.query(`SELECT id FROM ${db.quoted} WHERE queue = ? AND id IN (${idList})`, [
        "dead",
      ]);
      return dead.length === 3;
    });
    await page.goto(tableUrl("?state=dead"));
    await expect.poll(() => page.locator("table.rows tbody tr").count()).toBe(3);
    await expect.poll(() => card("dead").textContent()).toBe("3");
    if (screenshots) await page.screenshot({ path: join(docs, "dead.png"), fullPage: true });
    poisonKills = false;
    await page.locator('button[value="redrive:matching"]').click();
    await page.waitForURL(/\/jobs\//);
    await expect
      .poll(() => page.locator("[data-job-state]").textContent(), { timeout: 20_000 })
      .toContain("finished");
    if (screenshots) await page.screenshot({ path: join(docs, "job.png"), fullPage: true });
    await waitFor("the redriven rows to be handled", async () => {
      const done = await db.query(
        `SELECT id FROM ${db.quoted} WHERE processed_at IS NOT NULL AND queue IS NULL AND id IN (${idList})`,
      );
      return done.length === 3;
    });
    expect(handled.map(String)).toEqual(expect.arrayContaining(ids.map(String)));
    await page.goto(tableUrl("?state=dead"));
    await expect.poll(() => card("dead").textContent()).toBe("0");
  });

  it("pauses the table: claims stop (checked in the database) until it is resumed", async () => {
    await page.goto(tableUrl());
    await page.locator('h1 form button:text("Pause")').click();
    await page.waitForURL(/notice=paused/);
    expect((await worker.controlState(db.table)).paused).toBe(true);
    const since = reads();
    await waitFor("the worker to read the pause state twice", () => reads() >= since + 2);
    const ids = await publisher.publishMany(
      db.table,
      Array.from({ length: 3 }, (_, index) => ({ payload: { paused: index } })),
    );
    const idList = ids.map((value) => String(value)).join(",");
    const after = reads();
    await waitFor("the worker to read the pause state twice after the publish", () => reads() >= after + 2);
    const untouched = await db.query(
      `SELECT id FROM ${db.quoted} WHERE id IN (${idList}) AND attempt = 1 AND locked_until IS NULL AND processed_at IS NULL`,
    );
    expect(untouched.length, "rows claimed while paused").toBe(3);
    await expect.poll(() => page.locator("h1 .badge.paused").isVisible()).toBe(true);
    if (screenshots) await page.screenshot({ path: join(docs, "table-paused.png"), fullPage: true });
    await page.locator('h1 form button:text("Resume")').click();
    await page.waitForURL(/notice=resumed/);
    await waitFor("the rows published while paused to be handled", async () => {
      const done = await db.query(
        `SELECT id FROM ${db.quoted} WHERE id IN (${idList}) AND processed_at IS NOT NULL`,
      );
      return done.length === 3;
    });
  });

  it("refuses a request without credentials, lets a read-only user look but not act, and refuses a POST without the CSRF token", async () => {
    const [id] = await publisher.publishMany(db.table, [
      { payload: { guarded: true }, runAt: new Date(Date.now() + 3_600_000) },
    ]);
    const rowExists = async () =>
      (await db.query(`SELECT id FROM ${db.quoted} WHERE id = ?`, [id])).length === 1;
    await browser.context.setExtraHTTPHeaders({});
    // Chromium ends a navigation answered 401 with a challenge it has no credentials for as an
    // error page: the answer itself is what the test checks.
    const [anonymous] = await Promise.all([
      page.waitForResponse(`${server.origin}/`),
      page.goto(`${server.origin}/`).catch(() => null),
    ]);
    expect(anonymous.status()).toBe(401);
    await browser.context.setExtraHTTPHeaders({ authorization: READER });
    const asReader = await page.goto(tableUrl("?state=delayed"));
    expect(asReader?.status()).toBe(200);
    await expect.poll(() => page.locator("table.rows tbody tr").count()).toBeGreaterThan(0);
    expect(await page.locator('button[name="do"]').count()).toBe(0);
    const readerPost = await page.evaluate(
      async ({ path, rowId }) => {
        // Runs in the page: its document, typed here without the DOM library.
        const { document } = globalThis as unknown as {
          document: { querySelector(selector: string): { getAttribute(name: string): string | null } | null };
        };
        const token = document.querySelector('meta[name="rowclaim-csrf"]')?.getAttribute("content") ?? "";
        const body = new URLSearchParams({
          do: "delete:selected",
          id: rowId,
          state: "delayed",
          _csrf: token,
        });
        return (await fetch(path, { method: "POST", body })).status;
      },
      { path: `/tables/${db.table.name}/actions`, rowId: String(id) },
    );
    expect(readerPost).toBe(403);
    expect(await rowExists()).toBe(true);
    await browser.context.setExtraHTTPHeaders({ authorization: ADMIN });
    await page.goto(tableUrl("?state=delayed"));
    const noToken = await page.evaluate(
      async ({ path, rowId }) => {
        const body = new URLSearchParams({ do: "delete:selected", id: rowId, state: "delayed" });
        return (await fetch(path, { method: "POST", body })).status;
      },
      { path: `/tables/${db.table.name}/actions`, rowId: String(id) },
    );
    expect(noToken).toBe(403);
    expect(await rowExists()).toBe(true);
    await page.locator(`input[name="id"][value="${String(id)}"]`).check();
    await page.locator('button[value="delete:selected"]').click();
    await page.waitForURL(/notice=delete/);
    await waitFor("the row deleted through the page", async () => !(await rowExists()));
  });
});
