/**
 * rowclaim beside the hand-written loop on every database: runs `rowclaim bench --json` (the
 * command line's bench: the library's defaults against a loop of the same statements, see
 * `packages/cli/src/bench/`) on PostgreSQL, MySQL/MariaDB and SQLite one after another, writes
 * each result to `results/loop-<database>.json` and draws the ratios in `results/loops.svg`.
 *
 * Run: `pnpm --filter @rowclaim/bench loops [-- flags]`. Flags: `--jobs N` (10000), `--workers
 * 1,8`, `--rounds N` (3), `--postgres URL`, `--mysql URL` (the environment's
 * `ROWCLAIM_POSTGRES_URL`/`ROWCLAIM_MYSQL_URL`, else the local services), `--only
 * postgres,mysql,sqlite`, `--out DIR` (`results`).
 *
 * @module
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type ChartPanel, renderChart } from "./chart.js";

/** What `rowclaim bench --json` prints (the parts read here). */
export interface LoopBenchJson {
  readonly database: string;
  readonly jobs: number;
  readonly rounds: number;
  readonly results: readonly {
    readonly form: "lease" | "rowLock" | "advisory";
    readonly workers: number;
    readonly batch: number;
    readonly rowclaim: { readonly median: number };
    readonly loop: { readonly median: number };
    readonly ratio: number;
  }[];
}

const { values } = parseArgs({
  // `pnpm … start -- --flag` passes the `--` on.
  args: process.argv.slice(2).filter((arg, index) => index > 0 || arg !== "--"),
  options: {
    jobs: { type: "string", default: "10000" },
    workers: { type: "string", default: "1,8" },
    rounds: { type: "string", default: "3" },
    postgres: {
      type: "string",
      default: process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    },
    mysql: { type: "string", default: process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" },
    only: { type: "string", default: "postgres,mysql,sqlite" },
    out: { type: "string", default: "results" },
  },
  allowPositionals: false,
});

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = isAbsolute(values.out) ? values.out : resolve(packageDir, values.out);
const bin = join(dirname(createRequire(import.meta.url).resolve("rowclaim/package.json")), "dist/bin.js");
const databases = values.only.split(",") as ("postgres" | "mysql" | "sqlite")[];
const names = { postgres: "PostgreSQL", mysql: "MySQL/MariaDB", sqlite: "SQLite" } as const;
const formLabel = { lease: "lease", rowLock: "row lock", advisory: "advisory" } as const;

function runBench(database: "postgres" | "mysql" | "sqlite"): Promise<LoopBenchJson> {
  const url =
    database === "postgres"
      ? ["--url", values.postgres]
      : database === "mysql"
        ? ["--url", values.mysql]
        : [];
  const args = [
    bin,
    "bench",
    ...url,
    "--jobs",
    values.jobs,
    "--workers",
    values.workers,
    "--rounds",
    values.rounds,
  ];
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [...args, "--json", "--prefix", "rowclaim_loopbench"],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        process.stderr.write(
          stderr
            .split("\n")
            .filter((line) => !line.includes(" handled/s "))
            .join("\n"),
        );
        if (error !== null) fail(error);
        else done(JSON.parse(stdout) as LoopBenchJson);
      },
    );
  });
}

mkdirSync(outDir, { recursive: true });
const panels: ChartPanel[] = [];
for (const database of databases) {
  process.stderr.write(`rowclaim bench on ${names[database]}…\n`);
  const result = await runBench(database);
  const file = join(outDir, `loop-${database}.json`);
  writeFileSync(file, `${JSON.stringify({ generatedAt: new Date().toISOString(), ...result }, null, 2)}\n`);
  const biome = resolve(packageDir, "../../node_modules/.bin/biome");
  if (existsSync(biome)) {
    await new Promise((done) => execFile(biome, ["format", "--write", file], () => done(undefined)));
  }
  for (const entry of result.results) {
    process.stdout.write(
      `${names[database].padEnd(14)} ${formLabel[entry.form].padEnd(9)} ${String(entry.workers).padStart(2)} worker(s)  batch ${String(entry.batch).padStart(2)}  rowclaim ${String(entry.rowclaim.median).padStart(6)}  loop ${String(entry.loop.median).padStart(6)}  ÷ ${entry.ratio.toFixed(2)}\n`,
    );
  }
  const workerCounts = [...new Set(result.results.map((entry) => entry.workers))];
  panels.push({
    title: names[database],
    groups: workerCounts.map((workers) => ({
      title: `${workers} worker${workers === 1 ? "" : "s"}`,
      bars: result.results
        .filter((entry) => entry.workers === workers)
        .map((entry) => ({
          id: "rowclaim",
          label: formLabel[entry.form],
          value: entry.ratio,
          text: `${entry.ratio.toFixed(2)}×  (${entry.rowclaim.median.toLocaleString("en-US")} vs ${entry.loop.median.toLocaleString("en-US")} jobs/s, batch ${entry.batch})`,
        })),
    })),
  });
}
writeFileSync(
  join(outDir, "loops.svg"),
  renderChart(
    "rowclaim with its defaults ÷ a hand-written loop of the same statements (1.0 = as fast)",
    `${Number(values.jobs).toLocaleString("en-US")} pre-inserted no-op jobs per drain, median of ${values.rounds} interleaved rounds, ratio of medians (rowclaim bench)`,
    panels,
    { value: 1, label: "loop" },
  ),
);
process.stderr.write(`wrote ${outDir}/loop-*.json and ${join(outDir, "loops.svg")}\n`);
