// The adapters, each serving the dashboard under a base path on a real server: node:http,
// Express, Fastify, and Hono as a Web-standard framework (no adapter). Each answers a static
// file with the dashboard's headers, refuses a request without credentials with the basic
// challenge, and passes a form POST's body through intact (a pause, seen in the database).
import { createServer, type Server } from "node:http";
import { type Broker, createBroker, silentLogger } from "@rowclaim/core";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express.js";
import { fastifyDashboard } from "../src/adapters/fastify.js";
import { nodeHandler } from "../src/adapters/node.js";
import { csrfToken } from "../src/csrf.js";
import { CONTENT_SECURITY_POLICY, createDashboard, type Dashboard } from "../src/index.js";
import { openDatabase, type TestDatabase } from "./databases.js";
import { basic } from "./support.js";

const SECRET = "a-test-secret-of-enough-length";
const BASE = "/admin/queues";
const ADMIN = basic("ops", "admin-password");

let db: TestDatabase;
let broker: Broker;
let dashboard: Dashboard;

beforeAll(async () => {
  db = await openDatabase("sqlite", "adapters");
  broker = createBroker({ driver: db.driver(), logger: silentLogger });
  dashboard = createDashboard({
    broker,
    tables: [db.table],
    basePath: BASE,
    secret: SECRET,
    auth: { basic: [{ username: "ops", password: "admin-password", role: "admin" }] },
  });
});

afterAll(async () => {
  await broker?.close();
  await db?.close();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
}

async function checkServed(origin: string): Promise<void> {
  const asset = await fetch(`${origin}${BASE}/assets/dashboard.css`, { headers: { authorization: ADMIN } });
  expect(asset.status).toBe(200);
  expect(asset.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
  expect(await asset.text()).toContain(":root");
  const refused = await fetch(`${origin}${BASE}/`);
  expect(refused.status).toBe(401);
  expect(refused.headers.get("www-authenticate")).toMatch(/^Basic /);
  const token = await csrfToken(SECRET, { name: "ops", role: "admin", session: "basic:admin-password" });
  for (const [action, paused] of [
    ["pause", true],
    ["resume", false],
  ] as const) {
    const response = await fetch(`${origin}${BASE}/tables/${db.table.name}/${action}`, {
      method: "POST",
      redirect: "manual",
      headers: {
        authorization: ADMIN,
        "content-type": "application/x-www-form-urlencoded",
        origin,
        "sec-fetch-site": "same-origin",
      },
      body: new URLSearchParams({ _csrf: token, state: "due" }).toString(),
    });
    expect(response.status, `${action}: ${await response.clone().text()}`).toBe(303);
    expect(response.headers.get("location")).toMatch(new RegExp(`^${BASE}/tables/`));
    expect((await broker.controlState(db.table)).paused).toBe(paused);
  }
}

describe("adapters", () => {
  it("node:http", async () => {
    const server = createServer(nodeHandler(dashboard));
    try {
      await checkServed(await listen(server));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("Express, mounted under the base path, after a urlencoded body parser", async () => {
    const app = express();
    app.use(express.urlencoded({ extended: false }));
    app.use(BASE, expressMiddleware(dashboard));
    const server = createServer(app);
    try {
      await checkServed(await listen(server));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("Fastify, registered with the base path as prefix", async () => {
    const app = Fastify();
    await app.register(fastifyDashboard(dashboard), { prefix: BASE });
    const origin = await app.listen({ port: 0, host: "127.0.0.1" });
    try {
      await checkServed(origin);
    } finally {
      await app.close();
    }
  });

  it("Hono, as a Web-standard handler without an adapter", async () => {
    const app = new Hono();
    app.all(`${BASE}/*`, (context) => dashboard(context.req.raw));
    app.all(BASE, (context) => dashboard(context.req.raw));
    const server = createServer(nodeHandler((request) => Promise.resolve(app.fetch(request))));
    try {
      await checkServed(await listen(server));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
