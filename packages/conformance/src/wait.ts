/**
 * Waiting on conditions, never on fixed sleeps: {@link waitFor} polls a probe up to a deadline;
 * {@link Gate} lets a test hold a handler until it says so.
 *
 * @module
 */

/** How long {@link waitFor} waits unless told: long enough for a slow CI machine. */
export const DEFAULT_WAIT_MS = 20_000;

/**
 * Polls `probe` every `intervalMs` until it returns something other than `undefined`, `null` or
 * `false`, and returns that. Throws, naming `what`, when `timeoutMs` passes first.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
  const intervalMs = options.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await pause(intervalMs);
  }
}

/** Resolves after `ms` milliseconds. For simulating a handler's work, never as an assertion. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise a test opens when it chooses: handlers `await gate.opened` to stay in work. */
export class Gate {
  /** Resolves once {@link Gate.open} is called. */
  readonly opened: Promise<void>;
  #open!: () => void;
  #isOpen = false;

  constructor() {
    this.opened = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  /** Whether the gate is open. */
  get isOpen(): boolean {
    return this.#isOpen;
  }

  /** Opens the gate (again is harmless). */
  open(): void {
    this.#isOpen = true;
    this.#open();
  }
}

/** Rejects with `what` when `promise` has not settled within `timeoutMs` (so a hung handler fails its test). */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs = DEFAULT_WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
