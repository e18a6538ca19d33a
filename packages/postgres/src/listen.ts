/**
 * Cross-process wake-up with LISTEN/NOTIFY on a connection of its own; a cut connection is
 * replaced after a backoff, and the subscription woken once for what it may have missed.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Logger, TableDefinition } from "@rowclaim/core";
import type { WakeListener } from "@rowclaim/core/driver";
import type { NotificationLike, PoolClientLike, PoolLike } from "./pool-like.js";
import { listenSql, unlistenAllSql } from "./sql.js";

/** The NOTIFY channel of a table: `rowclaim_` and a hash of its schema and name (short and safe). */
export function channelFor(table: TableDefinition): string {
  const digest = createHash("sha256")
    .update(`${table.schema ?? ""}\u0000${table.name}`)
    .digest("hex")
    .slice(0, 40);
  return `rowclaim_${digest}`;
}

/** Reconnection delays: 100 ms doubling up to 5 s. */
export function reconnectDelay(failures: number): number {
  return Math.min(5000, 100 * 2 ** Math.max(0, failures));
}

/** A LISTEN on one channel, on a connection of its own, reconnecting when the connection is cut. */
export class ChannelListener implements WakeListener {
  readonly #pool: PoolLike;
  readonly #channel: string;
  readonly #onWake: () => void;
  readonly #logger: Logger | undefined;
  #client: PoolClientLike | undefined;
  #closed = false;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;

  private constructor(pool: PoolLike, channel: string, onWake: () => void, logger: Logger | undefined) {
    this.#pool = pool;
    this.#channel = channel;
    this.#onWake = onWake;
    this.#logger = logger;
  }

  /** Starts listening on `channel`; rejects when the first LISTEN fails. */
  static async start(
    pool: PoolLike,
    channel: string,
    onWake: () => void,
    logger?: Logger,
  ): Promise<ChannelListener> {
    const listener = new ChannelListener(pool, channel, onWake, logger);
    await listener.#connect();
    return listener;
  }

  readonly #onNotification = (message: NotificationLike): void => {
    if (message.channel === this.#channel) this.#onWake();
  };

  readonly #onError = (error: Error): void => {
    this.#lost(error);
  };

  readonly #onEnd = (): void => {
    this.#lost(new Error("rowclaim/postgres: the LISTEN connection ended."));
  };

  async #connect(): Promise<void> {
    const client = await this.#pool.connect();
    client.on("error", this.#onError);
    client.on("end", this.#onEnd);
    client.on("notification", this.#onNotification);
    try {
      await client.query({ text: listenSql(this.#channel) });
    } catch (error) {
      this.#detach(client);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    if (this.#closed) {
      this.#detach(client);
      client.release(true);
      return;
    }
    this.#client = client;
  }

  /** Stops handling the client's events; `sink` keeps a listener that swallows its late errors (a dead client). */
  #detach(client: PoolClientLike, sink = true): void {
    client.removeListener("notification", this.#onNotification);
    client.removeListener("end", this.#onEnd);
    client.removeListener("error", this.#onError);
    if (sink) client.on("error", () => {});
  }

  #lost(error: Error): void {
    const client = this.#client;
    if (client === undefined) return;
    this.#client = undefined;
    this.#detach(client);
    client.release(error);
    if (this.#closed) return;
    this.#logger?.warn(`LISTEN ${this.#channel}: the connection was cut; listening again.`, { error });
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed) return;
    const delay = reconnectDelay(this.#failures);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#connect().then(
        () => {
          this.#failures = 0;
          if (!this.#closed) this.#onWake();
        },
        (error: unknown) => {
          this.#failures += 1;
          this.#logger?.warn(`LISTEN ${this.#channel}: reconnecting failed; trying again.`, { error });
          this.#schedule();
        },
      );
    }, delay);
  }

  /** Stops listening and returns the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    this.#detach(client, false);
    const sink = (): void => {};
    client.on("error", sink);
    try {
      await client.query({ text: unlistenAllSql });
      client.removeListener("error", sink);
      client.release();
    } catch (error) {
      client.release(error instanceof Error ? error : true);
    }
  }
}
