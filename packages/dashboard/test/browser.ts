// Headless Chromium for the browser tests: Debian's chromium (tooling/chromium.sh installs it)
// driven by playwright-core, with a fresh user-data directory each launch, and the dashboard
// served on node:http on a free local port.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { nodeHandler } from "../src/adapters/node.js";
import type { Dashboard } from "../src/index.js";

/** Where Debian's chromium lives. */
export const CHROMIUM = "/usr/bin/chromium";

/** The flags the browser runs with: headless, no sandbox (root), nothing that reaches a network. */
export const CHROMIUM_ARGS: readonly string[] = Object.freeze([
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
]);

/** A browser context on a fresh profile; `close()` ends the browser and removes the profile. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "rowclaim-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Serves `dashboard` on 127.0.0.1 at a free port; resolves with its origin and a close. */
export async function serve(dashboard: Dashboard): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer(nodeHandler(dashboard));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The Authorization header of basic credentials. */
export function basicHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}
