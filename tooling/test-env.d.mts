/** The local database URLs .ci/run starts. */
export declare const localUrls: Readonly<{ postgres: string; mysql: string }>;
/** The URL of the database of `kind` for tests: the environment's, else testcontainers where Docker answers, else the local service. */
export declare function databaseUrl(kind: "postgres" | "mysql"): Promise<string>;
