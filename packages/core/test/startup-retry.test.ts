import { describe, expect, it } from "vitest";
import {
  BrokerError,
  type BrokerOptions,
  ConnectionLostError,
  createBroker,
  type Driver,
  SchemaError,
  silentLogger,
} from "../src/index.js";
import { retryStartup, startupRetryTime } from "../src/startup-retry.js";

function codeOf(run: () => unknown): string {
  try {
    run();
    return "nothing thrown";
  } catch (error) {
    return BrokerError.is(error) ? error.code : String(error);
  }
}

async function rejection(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "nothing thrown";
  } catch (error) {
    return BrokerError.is(error) ? error.code : String(error);
  }
}

const retry = (timeoutMs: number, signal = new AbortController().signal) => ({
  timeoutMs,
  signal,
  logger: { ...silentLogger, isDebugEnabled: () => false },
  table: "jobs",
});

describe("createBroker checks startupRetry like every other option", () => {
  it.each([
    [{ timeot: 100 }],
    [{ timeout: -1 }],
    [{ timeout: "30s" }],
    [{ timeout: Number.NaN }],
    [true],
    [null],
  ])("%o fails with INVALID_ARGUMENT", (startupRetry) => {
    expect(
      codeOf(() =>
        createBroker({
          driver: {} as Driver,
          logger: silentLogger,
          startupRetry,
        } as unknown as BrokerOptions),
      ),
    ).toBe("INVALID_ARGUMENT");
  });

  it("the default retries for 30 s; false and timeout 0 fail at once", () => {
    expect(startupRetryTime(undefined)).toBe(30_000);
    expect(startupRetryTime({})).toBe(30_000);
    expect(startupRetryTime(false)).toBe(0);
    expect(startupRetryTime({ timeout: 0 })).toBe(0);
    expect(startupRetryTime({ timeout: 5000 })).toBe(5000);
  });
});

describe("a start-up that lost its connection is tried again while its time lasts", () => {
  it("CONNECTION_LOST twice, then success: resolves with the third attempt's result", async () => {
    let attempts = 0;
    const result = await retryStartup(async () => {
      attempts += 1;
      if (attempts < 3) throw new ConnectionLostError("not up yet");
      return "opened";
    }, retry(60_000));
    expect(result).toBe("opened");
    expect(attempts).toBe(3);
  });

  it("a permanent failure (SCHEMA) is not retried", async () => {
    let attempts = 0;
    const code = await rejection(() =>
      retryStartup(async () => {
        attempts += 1;
        throw new SchemaError("no table");
      }, retry(60_000)),
    );
    expect(code).toBe("SCHEMA");
    expect(attempts).toBe(1);
  });

  it("with no time to retry, the first CONNECTION_LOST is thrown", async () => {
    let attempts = 0;
    const code = await rejection(() =>
      retryStartup(async () => {
        attempts += 1;
        throw new ConnectionLostError("not up yet");
      }, retry(0)),
    );
    expect(code).toBe("CONNECTION_LOST");
    expect(attempts).toBe(1);
  });

  it("a broker closing while the start-up waits to retry ends it with CLOSED", async () => {
    const closing = new AbortController();
    let attempts = 0;
    const pending = rejection(() =>
      retryStartup(
        async () => {
          attempts += 1;
          if (attempts === 1) setImmediate(() => closing.abort());
          throw new ConnectionLostError("not up yet");
        },
        retry(60_000, closing.signal),
      ),
    );
    expect(await pending).toBe("CLOSED");
  });
});
