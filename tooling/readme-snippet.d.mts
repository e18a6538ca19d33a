/**
 * The lines of `file` between `// #region <name>` and `// #endregion <name>`, unindented by the
 * first line's indentation, joined with newlines.
 */
export declare function exampleRegion(file: URL | string, name: string): string;
/** Whether the text of `readme` holds the region `name` of `file` ({@link exampleRegion}) verbatim. */
export declare function readmeShows(readme: URL | string, file: URL | string, name: string): boolean;
