/**
 * The dashboard on `node:http` (and anything that hands over Node's request and response, such
 * as Express and Fastify, whose adapters build on this): a Node request becomes a Web
 * `Request`, the dashboard's `Response` is written back.
 *
 * ```ts
 * import { createServer } from "node:http";
 * import { nodeHandler } from "@rowclaim/dashboard/node";
 * createServer(nodeHandler(dashboard)).listen(3000);
 * ```
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** A Web-standard handler, as `createDashboard` returns it. */
export type FetchHandler = (request: Request) => Promise<Response>;

/** How the request's URL is built. */
export interface NodeRequestOptions {
  /** The path as the client sent it (Express's `originalUrl`); default `request.url`. */
  readonly path?: string;
  /** A body already read by a framework, instead of reading the stream. */
  readonly body?: Uint8Array | string;
  /** `"https"` behind a proxy that ends TLS; default: `https` when the socket is encrypted. */
  readonly protocol?: "http" | "https";
}

/** The Web `Request` for a Node request: method, URL from the `Host` header, headers and body. */
export async function toWebRequest(
  request: IncomingMessage,
  options: NodeRequestOptions = {},
): Promise<Request> {
  const encrypted = (request.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
  const protocol = options.protocol ?? (encrypted ? "https" : "http");
  const host = request.headers.host ?? "localhost";
  const url = new URL(options.path ?? request.url ?? "/", `${protocol}://${host}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  const method = (request.method ?? "GET").toUpperCase();
  let body: Uint8Array | string | undefined;
  if (method !== "GET" && method !== "HEAD") body = options.body ?? (await readBody(request));
  return new Request(url, { method, headers, ...(body === undefined ? {} : { body }) });
}

/** Writes a Web `Response` to a Node response. */
export async function writeWebResponse(response: Response, target: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  target.writeHead(response.status, headers);
  const body = response.body === null ? undefined : new Uint8Array(await response.arrayBuffer());
  target.end(body);
}

/** A `node:http` request listener that answers with `handler`. */
export function nodeHandler(
  handler: FetchHandler,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    void serveNode(handler, request, response);
  };
}

/** Answers one Node request with `handler`; a failure to read or write ends the response with 500. */
export async function serveNode(
  handler: FetchHandler,
  request: IncomingMessage,
  response: ServerResponse,
  options: NodeRequestOptions = {},
): Promise<void> {
  try {
    await writeWebResponse(await handler(await toWebRequest(request, options)), response);
  } catch {
    if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
    response.end("The dashboard could not answer.");
  }
}

/** The most bytes a request body may have here (the dashboard's forms are small). */
const MAX_BODY_BYTES = 1024 * 1024;

function readBody(request: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    request.on("data", (chunk: Uint8Array) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}
