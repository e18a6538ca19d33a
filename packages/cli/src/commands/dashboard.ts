/**
 * `rowclaim dashboard`: serves `@rowclaim/dashboard` over the tables of the config module (all of
 * them, or those `--table` picks) on a local port, behind basic authentication whose
 * password comes from the environment. Runs until SIGINT or SIGTERM.
 *
 * @module
 */
import { createServer } from "node:http";
import { booleanFlag, integerFlag, listFlag, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_OK } from "../command.js";
import { findConfig, loadConfig, pickTables } from "../config.js";
import { createDriver } from "../connect.js";
import { configFlag, urlFlag } from "../table-source.js";
import { parseTarget } from "../target.js";

/** The environment variable that holds the dashboard user's password. */
export const DASHBOARD_PASSWORD_ENV = "ROWCLAIM_DASHBOARD_PASSWORD";

/** `@rowclaim/dashboard` is an optional peer of the command line: loaded only by this command. */
export class DashboardNotInstalledError extends Error {
  /** The stable code. */
  readonly code = "DASHBOARD_NOT_INSTALLED";
  constructor(cause: unknown) {
    super(
      "rowclaim dashboard needs @rowclaim/dashboard, which is not installed: npm install @rowclaim/dashboard",
      { cause },
    );
    this.name = "DashboardNotInstalledError";
  }
}

/** The `dashboard` command. */
export const dashboardCommand: Command = {
  spec: {
    name: "dashboard",
    summary: "serve the web dashboard over your tables (counts, rows, search, retry, redrive, pause)",
    details: [
      `Closed by default: the user (--user, default admin) signs in with basic authentication and the`,
      `password in ${DASHBOARD_PASSWORD_ENV}; without it the command refuses to start. --read-only makes`,
      "that user read-only. Listens on 127.0.0.1 unless --host says otherwise. Needs @rowclaim/dashboard.",
    ],
    flags: {
      url: urlFlag,
      config: configFlag,
      table: {
        type: "string",
        value: "NAME",
        multiple: true,
        description: "The config's table(s) to show (every table of the config when none is named).",
      },
      port: {
        type: "integer",
        value: "PORT",
        min: 0,
        max: 65535,
        defaultText: "4000",
        description: "The port (0: any free one).",
      },
      host: {
        type: "string",
        value: "HOST",
        defaultText: "127.0.0.1",
        description: "The address to listen on.",
      },
      "base-path": {
        type: "string",
        value: "PATH",
        defaultText: "/",
        description: "Serve under this path (for a proxy).",
      },
      user: {
        type: "string",
        value: "NAME",
        defaultText: "admin",
        description: "The user name to sign in with.",
      },
      "read-only": { type: "boolean", description: "The user may look but not act." },
    },
    examples: [
      `${DASHBOARD_PASSWORD_ENV}=secret rowclaim dashboard --config rowclaim.config.mjs`,
      `${DASHBOARD_PASSWORD_ENV}=secret rowclaim dashboard --table jobs --port 8080 --read-only`,
    ],
  },
  async run(flags, io) {
    const password = process.env[DASHBOARD_PASSWORD_ENV];
    if (password === undefined || password === "")
      throw new UsageError(
        `set ${DASHBOARD_PASSWORD_ENV}: the dashboard is never served without a password.`,
        "dashboard",
      );
    const configFile = findConfig(stringFlag(flags, "config"));
    if (configFile === undefined)
      throw new UsageError(
        "dashboard needs a config module (--config FILE, or rowclaim.config.mjs here) that lists the tables.",
        "dashboard",
      );
    const config = await loadConfig(configFile);
    const tables = pickTables(config, listFlag(flags, "table"), "dashboard");
    const url = stringFlag(flags, "url") ?? config.url;
    if (url === undefined)
      throw new UsageError("dashboard needs --url URL (or a url in the config).", "dashboard");
    const basePathFlag = stringFlag(flags, "base-path", "/");
    const basePath = basePathFlag.replace(/\/+$/, "");
    let dashboardModule: typeof import("@rowclaim/dashboard");
    let nodeModule: typeof import("@rowclaim/dashboard/node");
    try {
      dashboardModule = await import("@rowclaim/dashboard");
      nodeModule = await import("@rowclaim/dashboard/node");
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const missing =
        (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
        String((error as Error).message).includes("@rowclaim/dashboard");
      if (missing) throw new DashboardNotInstalledError(error);
      throw error;
    }
    const driver = await createDriver(parseTarget(url, "dashboard"));
    const dashboard = dashboardModule.createDashboard({
      driver,
      tables,
      basePath,
      auth: {
        basic: [
          {
            username: stringFlag(flags, "user", "admin"),
            password,
            role: booleanFlag(flags, "read-only") ? "read" : "admin",
          },
        ],
      },
    });
    const server = createServer(nodeModule.nodeHandler(dashboard));
    const host = stringFlag(flags, "host", "127.0.0.1");
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(integerFlag(flags, "port", 4000), host, () => resolve());
    });
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    io.stdout.write(
      `rowclaim dashboard listening on http://${host.includes(":") ? `[${host}]` : host}:${port}${basePath}/ (${tables.map((table) => table.name).join(", ")})\n`,
    );
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
        server.close(() => resolve());
        server.closeAllConnections();
      };
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
    });
    await dashboard.settled();
    await driver.close();
    return EXIT_OK;
  },
};
