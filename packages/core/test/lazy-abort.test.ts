import { describe, expect, it } from "vitest";
import { LazyAbort } from "../src/lazy-abort.js";

describe("a held row's abort signal, made on first read", () => {
  it("is a live signal that aborts with the reason when read before the abort", () => {
    const lazy = new LazyAbort();
    const signal = lazy.signal;
    expect(signal.aborted).toBe(false);
    const reason = new Error("lease lost");
    lazy.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(lazy.aborted).toBe(true);
  });

  it("is made already aborted, with the first reason, when first read after the abort", () => {
    const lazy = new LazyAbort();
    const first = new Error("closed");
    lazy.abort(first);
    lazy.abort(new Error("later"));
    expect(lazy.aborted).toBe(true);
    expect(lazy.signal.aborted).toBe(true);
    expect(lazy.signal.reason).toBe(first);
    expect(lazy.signal).toBe(lazy.signal);
  });

  it("aborts with an AbortError when no reason is given, as AbortController does", () => {
    const lazy = new LazyAbort();
    lazy.abort();
    expect((lazy.signal.reason as DOMException).name).toBe("AbortError");
  });

  it("reports not aborted without making a signal", () => {
    const lazy = new LazyAbort();
    expect(lazy.aborted).toBe(false);
  });
});
