/**
 * Assertions on rowclaim errors: tests assert stable codes, never message text.
 *
 * @module
 */
import { BrokerError, type BrokerErrorCode } from "@rowclaim/core";
import { expect } from "vitest";

/** The error `run` throws (or rejects with), or `undefined`. */
export async function caught(run: () => unknown): Promise<unknown> {
  try {
    await run();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Asserts that `error` is a rowclaim error with `code`. */
export function expectCode(error: unknown, code: BrokerErrorCode): void {
  const got = BrokerError.is(error) ? error.code : error === undefined ? "nothing thrown" : String(error);
  expect(BrokerError.is(error, code), `expected ${code}, got ${got}`).toBe(true);
}
