/**
 * The dashboard as a Fastify plugin, with no dependency on Fastify (it uses the instance it is
 * given). Register it with the prefix the dashboard's `basePath` names; inside its own scope it
 * takes every body as raw bytes, so the form posts reach the dashboard as sent:
 *
 * ```ts
 * import { fastifyDashboard } from "@rowclaim/dashboard/fastify";
 * const dashboard = createDashboard({ broker, tables, auth, basePath: "/admin/queues" });
 * await app.register(fastifyDashboard(dashboard), { prefix: "/admin/queues" });
 * ```
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FetchHandler, toWebRequest } from "./node.js";

/** What the plugin uses of a Fastify request. */
export interface FastifyLikeRequest {
  readonly raw: IncomingMessage;
  readonly body?: unknown;
  readonly protocol?: string;
}

/** What the plugin uses of a Fastify reply. */
export interface FastifyLikeReply {
  readonly raw: ServerResponse;
  code(status: number): FastifyLikeReply;
  header(name: string, value: string | string[]): FastifyLikeReply;
  send(payload?: Buffer | string): FastifyLikeReply;
}

/** What the plugin uses of a Fastify instance. */
export interface FastifyLikeInstance {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    type: string,
    options: { parseAs: "buffer" },
    parser: (request: unknown, body: Buffer, done: (error: Error | null, body?: Buffer) => void) => void,
  ): void;
  all(
    path: string,
    handler: (request: FastifyLikeRequest, reply: FastifyLikeReply) => Promise<unknown>,
  ): void;
}

/** A Fastify plugin (register it without `fastify-plugin`, so its body parsing stays in its scope). */
export function fastifyDashboard(handler: FetchHandler): (instance: FastifyLikeInstance) => Promise<void> {
  return async (instance) => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    const route = async (request: FastifyLikeRequest, reply: FastifyLikeReply) => {
      const body = request.body instanceof Uint8Array ? request.body : undefined;
      const web = await toWebRequest(request.raw, {
        ...(body === undefined ? {} : { body }),
        ...(request.protocol === "https" ? { protocol: "https" as const } : {}),
      });
      const response = await handler(web);
      reply.code(response.status);
      response.headers.forEach((value, name) => {
        if (name !== "set-cookie") reply.header(name, value);
      });
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) reply.header("set-cookie", cookies);
      return reply.send(Buffer.from(await response.arrayBuffer()));
    };
    instance.all("/", route);
    instance.all("/*", route);
  };
}
