/** `claimer`, with each call of each of its methods counted in `calls` (by method name). */
export declare function countCalls<C extends object>(claimer: C, calls: Map<string, number>): C;
/** `inner`, with every claimer it opens wrapped by `wrap` (by default `countCalls` into `calls`). */
export declare function countingDriver<D extends { open(...args: never[]): Promise<unknown> }>(
  inner: D,
  calls: Map<string, number>,
  wrap?: (claimer: Awaited<ReturnType<D["open"]>>) => Awaited<ReturnType<D["open"]>>,
): D;
