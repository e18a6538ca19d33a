/** The vitest settings every rowclaim package shares. */
export declare function vitestConfig(
  name: string,
  overrides?: Record<string, unknown>,
): { test: Record<string, unknown> };
