/** The local database URLs .ci/run starts. */
export declare const localUrls: Readonly<{ postgres: string; mysql: string }>;
/** The URL of the database of `kind` for tests: the environment's, else testcontainers where Docker answers, else the local service. */
export declare function databaseUrl(kind: "postgres" | "mysql"): Promise<string>;
/** Whether this run is the load step (`ROWCLAIM_LOAD=1`, set by tooling/load-check.sh), where the longest checks run. */
export declare const inLoadStep: boolean;
/** The heap test's opt-out outside the load step (a real database's run; the in-memory driver runs it always); empty in the load step. */
export declare function heapTestOptOut(): Readonly<Record<string, string>>;
/** The conformance opt-outs (`harness.skip`) of the server databases: the heap test and the full start-up fault loop outside the load step; the start-up sample in it. */
export declare function loadStepOptOuts(): Readonly<Record<string, string>>;
