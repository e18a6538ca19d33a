/**
 * Test helper shared by the driver packages: a driver whose claimers count their method calls,
 * so that a test can tell how a broker used the claimer (`claimWithAcks`, `endBatchWithClaim`)
 * while the real driver does the work; a wrapper can also inject a failure into one of them.
 */

/** `claimer`, with each call of each of its methods counted in `calls` (by method name). */
export function countCalls(claimer, calls) {
  return new Proxy(claimer, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function" || typeof property !== "string") return value;
      return (...args) => {
        calls.set(property, (calls.get(property) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
}

/** `inner`, with every claimer it opens wrapped by `wrap` (by default {@link countCalls} into `calls`). */
export function countingDriver(inner, calls, wrap = (claimer) => countCalls(claimer, calls)) {
  return new Proxy(inner, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === "open") {
        return async (...args) => wrap(await value.apply(target, args));
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
