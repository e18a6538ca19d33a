/**
 * A TCP proxy in front of the database server that refuses connections (accepts and resets
 * them) until it is told to forward: a database that is not up yet, as a container start meets
 * it, on a real port.
 *
 * @module
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import type { ServerAddress } from "./harness.js";

/** A proxy that refuses until {@link RefusingProxy.forward} is called. */
export class RefusingProxy {
  readonly #server: Server;
  readonly #target: ServerAddress;
  readonly #sockets = new Set<Socket>();
  #forwarding = false;
  /** How many connections were refused so far. */
  refused = 0;

  private constructor(server: Server, target: ServerAddress) {
    this.#server = server;
    this.#target = target;
    server.on("connection", (socket) => this.#accept(socket));
  }

  /** Starts a proxy to `target` on a free port of 127.0.0.1, refusing. */
  static async start(target: ServerAddress): Promise<RefusingProxy> {
    const server = createServer();
    const proxy = new RefusingProxy(server, target);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return proxy;
  }

  /** Where the proxy listens. */
  get address(): ServerAddress {
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("the proxy does not listen");
    return { host: "127.0.0.1", port: address.port };
  }

  /** From now on, connections are forwarded to the server. */
  forward(): void {
    this.#forwarding = true;
  }

  /** Stops listening and ends every connection. */
  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => {});
    if (!this.#forwarding) {
      this.refused += 1;
      socket.resetAndDestroy();
      return;
    }
    const upstream = tcpConnect(this.#target.port, this.#target.host);
    this.#sockets.add(upstream);
    upstream.on("close", () => {
      this.#sockets.delete(upstream);
      socket.destroy();
    });
    upstream.on("error", () => {});
    socket.on("close", () => upstream.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
  }
}
