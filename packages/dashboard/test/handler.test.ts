// The handler as a Web-standard function, Request in and Response out, over a SQLite table:
// closed by default, basic credentials and roles, CSRF on every POST, escaping, redaction,
// routing under a base path, the security headers, and actions through core's functions.
import { type Broker, createBroker, type Driver, type RowId } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CONTENT_SECURITY_POLICY,
  createDashboard,
  type Dashboard,
  type DashboardAuth,
  type DashboardOptions,
} from "../src/index.js";
import { openDatabase, type TestDatabase } from "./databases.js";
import { basic, get, ORIGIN, post, tokenOf, waitFor } from "./support.js";

const ADMIN = basic("ops", "admin-password");
const READER = basic("viewer", "read-password");
const auth: DashboardAuth = {
  basic: [
    { username: "ops", password: "admin-password", role: "admin" },
    { username: "viewer", password: "read-password" },
  ],
};

let db: TestDatabase;
let driver: Driver;
let broker: Broker;

beforeAll(async () => {
  db = await openDatabase("sqlite", "handler");
  driver = db.driver();
  broker = createBroker({ driver });
});

afterAll(async () => {
  await db?.close();
});

function dashboard(extra: Partial<DashboardOptions> = {}): Dashboard {
  return createDashboard({ broker, tables: [db.table], auth, countsTtlMs: 0, ...extra });
}

async function rowCount(where = "1 = 1"): Promise<number> {
  const rows = await db.query(`SELECT COUNT(*) AS n FROM ${db.quoted} WHERE ${where}`);
  return Number(rows[0]?.n);
}

describe("closed by default", () => {
  it("a dashboard without auth refuses every request, static files included, with 403", async () => {
    const open = createDashboard({ broker, tables: [db.table] });
    for (const path of ["/", "/assets/dashboard.js", `/tables/${db.table.name}`]) {
      const response = await get(open, path);
      expect(response.status, path).toBe(403);
      expect(await response.text()).not.toContain(db.table.name === path ? "x" : "<table");
    }
  });

  it("a request without credentials is refused with 401 and a basic challenge; wrong ones too", async () => {
    const handler = dashboard();
    const none = await get(handler, "/");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect((await get(handler, "/", basic("ops", "wrong"))).status).toBe(401);
    expect((await get(handler, "/", basic("nobody", "admin-password"))).status).toBe(401);
    expect((await get(handler, "/assets/dashboard.css")).status).toBe(401);
  });

  it("an authorize callback decides; null refuses", async () => {
    const handler = createDashboard({
      broker,
      tables: [db.table],
      auth: {
        authorize: (request) =>
          request.headers.get("x-user") === "ana" ? { name: "ana", role: "read" } : null,
      },
    });
    expect((await get(handler, "/assets/dashboard.css")).status).toBe(401);
    const ok = await handler(new Request(`${ORIGIN}/assets/dashboard.css`, { headers: { "x-user": "ana" } }));
    expect(ok.status).toBe(200);
  });
});

describe("pages and headers", () => {
  it("every response carries the strict Content-Security-Policy; the page links one script and one style sheet of its own", async () => {
    const handler = dashboard();
    const page = await get(handler, "/", ADMIN);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const text = await page.text();
    expect(text).toContain('<script src="/assets/dashboard.js" defer></script>');
    expect(text).toContain('<link rel="stylesheet" href="/assets/dashboard.css">');
    expect(text.match(/<script/g)).toHaveLength(1);
    expect(text).not.toMatch(/ style=|<style/);
    expect(text).not.toMatch(/https?:\/\//);
    const script = await get(handler, "/assets/dashboard.js", ADMIN);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect((await get(handler, "/assets/dashboard.css", ADMIN)).headers.get("content-type")).toMatch(
      /^text\/css/,
    );
    expect((await get(handler, "/assets/other.js", ADMIN)).status).toBe(404);
    expect((await get(handler, "/tables/no_such_table", ADMIN)).status).toBe(404);
    expect(CONTENT_SECURITY_POLICY).not.toContain("unsafe-inline");
  });

  it("under a base path every link starts with it, and requests outside it are not answered", async () => {
    const handler = dashboard({ basePath: "/admin/queues" });
    expect((await get(handler, "/", ADMIN)).status).toBe(404);
    expect((await get(handler, "/admin/queuesx", ADMIN)).status).toBe(404);
    const bare = await get(handler, "/admin/queues", ADMIN);
    expect(bare.status).toBe(303);
    expect(bare.headers.get("location")).toBe("/admin/queues/");
    const text = await (await get(handler, "/admin/queues/", ADMIN)).text();
    const links = [...text.matchAll(/(?:href|src|action)="([^"]*)"/g)].map((match) => match[1]);
    expect(links.length).toBeGreaterThan(2);
    for (const link of links) expect(link).toMatch(/^\/admin\/queues\//);
  });

  it("payloads, headers, groups and searches are HTML-escaped", async () => {
    const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
    const [id] = await broker.publishMany(db.table, [
      { payload: { note: evil }, group: `"><b>group</b>`, headers: { trace: evil } },
    ]);
    const handler = dashboard();
    const list = await (
      await get(handler, `/tables/${db.table.name}?q=${encodeURIComponent(evil)}`, ADMIN)
    ).text();
    const detail = await (await get(handler, `/tables/${db.table.name}/rows/${String(id)}`, ADMIN)).text();
    for (const page of [list, detail]) {
      expect(page).not.toContain("<script>alert");
      expect(page).not.toContain("<img src=x");
      expect(page).not.toContain("<b>group</b>");
    }
    expect(detail).toContain("&lt;script&gt;alert(");
    expect(list).toContain("&lt;script&gt;alert(");
    await broker.driver.operations?.act(db.table, {
      kind: "delete",
      selection: { ids: [id as RowId] },
      scope: "any",
      deadGroup: "dead",
      now: new Date(),
    });
  });

  it("payloads can be hidden, or redacted by a callback", async () => {
    const [id] = await broker.publishMany(db.table, [{ payload: { card: "4111-1111", name: "Ana" } }]);
    const hidden = await (
      await get(dashboard({ payloads: "hide" }), `/tables/${db.table.name}/rows/${String(id)}`, ADMIN)
    ).text();
    expect(hidden).not.toContain("4111");
    expect(hidden).toContain("(hidden)");
    const redacted = await (
      await get(
        dashboard({ payloads: (payload) => ({ ...(payload as object), card: "****" }) }),
        `/tables/${db.table.name}/rows/${String(id)}`,
        ADMIN,
      )
    ).text();
    expect(redacted).not.toContain("4111");
    expect(redacted).toContain("****");
    expect(redacted).toContain("Ana");
    const search = await (
      await get(dashboard({ payloads: "hide" }), `/tables/${db.table.name}?q=4111`, ADMIN)
    ).text();
    expect(search).not.toContain(`>${String(id)}</a>`);
  });

  it("bad options are refused with INVALID_ARGUMENT before anything is served", () => {
    const code = (make: () => unknown) => {
      try {
        make();
        return "none";
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(code(() => createDashboard({ broker, tables: [db.table], auht: auth } as never))).toBe(
      "INVALID_ARGUMENT",
    );
    expect(code(() => createDashboard({ broker, tables: [] }))).toBe("INVALID_ARGUMENT");
    expect(code(() => createDashboard({ broker, driver, tables: [db.table] }))).toBe("INVALID_ARGUMENT");
    expect(code(() => createDashboard({ broker, tables: [db.table], basePath: "/x/" }))).toBe(
      "INVALID_ARGUMENT",
    );
    expect(
      code(() =>
        createDashboard({ broker, tables: [db.table], auth: { basic: [{ username: "a", password: "" }] } }),
      ),
    ).toBe("INVALID_ARGUMENT");
  });
});

describe("acting: roles and CSRF", () => {
  it("a read-only user sees no actions and a POST of theirs is refused with 403, changing nothing", async () => {
    const [id] = await broker.publishMany(db.table, [{ payload: { n: "read-only" } }]);
    const handler = dashboard();
    const page = await (await get(handler, `/tables/${db.table.name}`, READER)).text();
    expect(page).not.toContain('name="do"');
    const token = tokenOf(await (await get(handler, "/", READER)).text());
    const response = await post(
      handler,
      `/tables/${db.table.name}/actions`,
      { do: "delete:selected", id: String(id), state: "due", _csrf: token },
      READER,
    );
    expect(response.status).toBe(403);
    expect(await rowCount(`id = ${String(id)}`)).toBe(1);
  });

  it("a POST without the CSRF token, with a wrong one, or from another site is refused with 403 and changes nothing", async () => {
    const [id] = await broker.publishMany(db.table, [{ payload: { n: "csrf" } }]);
    const handler = dashboard();
    const token = tokenOf(await (await get(handler, `/tables/${db.table.name}`, ADMIN)).text());
    const fields = { do: "delete:selected", id: String(id), state: "due" };
    const path = `/tables/${db.table.name}/actions`;
    expect((await post(handler, path, fields, ADMIN)).status).toBe(403);
    expect((await post(handler, path, { ...fields, _csrf: `${token}x` }, ADMIN)).status).toBe(403);
    expect(
      (
        await post(
          handler,
          path,
          { ...fields, _csrf: tokenOf(await (await get(handler, "/", READER)).text()) },
          ADMIN,
        )
      ).status,
    ).toBe(403);
    expect(
      (await post(handler, path, { ...fields, _csrf: token }, ADMIN, { "sec-fetch-site": "cross-site" }))
        .status,
    ).toBe(403);
    expect(
      (await post(handler, path, { ...fields, _csrf: token }, ADMIN, { origin: "http://evil.test" })).status,
    ).toBe(403);
    expect(await rowCount(`id = ${String(id)}`)).toBe(1);
    const done = await post(handler, path, { ...fields, _csrf: token }, ADMIN);
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toContain("notice=delete");
    expect(await rowCount(`id = ${String(id)}`)).toBe(0);
  });

  it("an action over everything a filter matches runs in bounded batches, with a progress page", async () => {
    const ids = await broker.publishMany(
      db.table,
      Array.from({ length: 7 }, (_, index) => ({ payload: { batch: "bulk-7", index }, group: "bulk" })),
    );
    const handler = dashboard({ batchSize: 3 });
    const token = tokenOf(await (await get(handler, `/tables/${db.table.name}`, ADMIN)).text());
    const started = await post(
      handler,
      `/tables/${db.table.name}/actions`,
      { do: "cancel:matching", state: "due", group: "bulk", _csrf: token },
      ADMIN,
    );
    expect(started.status).toBe(303);
    const jobPath = started.headers.get("location") ?? "";
    expect(jobPath).toMatch(/^\/jobs\//);
    const progress = await waitFor("the bulk job to finish", async () => {
      const json = (await (await get(handler, `${jobPath}/progress.json`, ADMIN)).json()) as {
        finished: boolean;
        done: number;
        batches: number;
      };
      return json.finished ? json : undefined;
    });
    expect(progress.done).toBe(7);
    expect(progress.batches).toBeGreaterThanOrEqual(3);
    expect(await rowCount(`id IN (${ids.join(",")})`)).toBe(0);
    expect(await (await get(handler, jobPath, ADMIN)).text()).toContain("finished");
  });
});
