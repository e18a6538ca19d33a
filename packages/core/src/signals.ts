/**
 * `createBroker({ handleSignals: true })`: SIGTERM and SIGINT close the broker (deliveries in
 * work settle, locks are released), then the signal takes its default course.
 *
 * @module
 */

/** Which signals close the broker: `true` for SIGTERM and SIGINT, or a list. */
export type HandleSignalsOption = boolean | readonly NodeJS.Signals[];

/** The signals `handleSignals: true` listens to. */
export const DEFAULT_SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = Object.freeze(["SIGTERM", "SIGINT"]);

/**
 * Listens for `signals`; on the first, calls `close()` and, once it settles, removes its
 * listeners and sends the signal again to the process when nothing else listens to it, so
 * that the process ends as the signal would have ended it. A second signal while closing
 * ends the process at once. Returns a function that removes the listeners (the broker calls it
 * when it is closed another way).
 */
export function closeOnSignals(
  signals: readonly NodeJS.Signals[],
  close: () => Promise<void>,
  onError: (error: unknown) => void,
): () => void {
  let closing = false;
  const listener = (signal: NodeJS.Signals): void => {
    if (closing) {
      remove();
      process.kill(process.pid, signal);
      return;
    }
    closing = true;
    void close()
      .catch(onError)
      .finally(() => {
        remove();
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
  };
  const remove = (): void => {
    for (const signal of signals) process.removeListener(signal, listener);
  };
  for (const signal of signals) process.on(signal, listener);
  return remove;
}
