/**
 * The dashboard as Express middleware, with no dependency on Express (its request and response
 * are Node's). Mount it under a path the dashboard's `basePath` names:
 *
 * ```ts
 * import { expressMiddleware } from "@rowclaim/dashboard/express";
 * const dashboard = createDashboard({ broker, tables, auth, basePath: "/admin/queues" });
 * app.use("/admin/queues", expressMiddleware(dashboard));
 * ```
 *
 * A body parser mounted before it is fine: a body it already read is given to the dashboard.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FetchHandler, serveNode } from "./node.js";

/** What the middleware reads of Express's request beyond Node's. */
export interface ExpressLikeRequest extends IncomingMessage {
  /** The path as the client sent it, before Express stripped the mount path. */
  readonly originalUrl?: string;
  /** A body a parser already read (`express.urlencoded()`, `express.text()`, `express.raw()`). */
  readonly body?: unknown;
  /** `"https"` where Express trusts the proxy. */
  readonly protocol?: string;
}

/** Express middleware that answers every request under its mount with `handler`. */
export function expressMiddleware(
  handler: FetchHandler,
): (request: ExpressLikeRequest, response: ServerResponse, next: (error?: unknown) => void) => void {
  return (request, response) => {
    const body = parsedBody(request.body);
    void serveNode(handler, request, response, {
      path: request.originalUrl ?? request.url ?? "/",
      ...(body === undefined ? {} : { body }),
      ...(request.protocol === "https" ? { protocol: "https" as const } : {}),
    });
  };
}

function parsedBody(body: unknown): Uint8Array | string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (typeof body === "object") {
    // Parsed by express.urlencoded(): back into the form it came as.
    const entries = Object.entries(body as Record<string, unknown>);
    if (entries.length === 0) return undefined;
    const form = new URLSearchParams();
    for (const [name, value] of entries) {
      if (Array.isArray(value)) for (const item of value) form.append(name, String(item));
      else form.append(name, String(value));
    }
    return form.toString();
  }
  return undefined;
}
