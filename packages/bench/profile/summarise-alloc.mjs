// Summarises a sampled allocation profile (drain.mjs with ALLOC=<file>): bytes allocated by
// function (self) and by the allocating function's caller chain. Usage: node summarise-alloc.mjs <file> [top=40] [jobs]
import { readFileSync } from "node:fs";

const [file, topArg = "40", jobsArg] = process.argv.slice(2);
const { head } = JSON.parse(readFileSync(file, "utf8"));
const top = Number(topArg);
const short = (url) =>
  url
    .replace(/^file:\/\//, "")
    .replace(/.*\/node_modules\/\.pnpm\/([^/]+)\/node_modules\//, "[$1] ")
    .replace(/.*\/packages\//, "");
const self = new Map();
const withCaller = new Map();
let total = 0;
const walk = (node, stack) => {
  const frame = `${node.callFrame.functionName || "(anonymous)"} ${short(node.callFrame.url) || "(native)"}:${node.callFrame.lineNumber + 1}`;
  const bytes = node.selfSize;
  if (bytes > 0) {
    self.set(frame, (self.get(frame) ?? 0) + bytes);
    const ours =
      [...stack, frame].reverse().find((f) => /(core|postgres|sqlite|mysql)\/dist\//.test(f)) ??
      "(none of rowclaim)";
    const key = `${frame}  <=  ${ours}`;
    withCaller.set(key, (withCaller.get(key) ?? 0) + bytes);
    total += bytes;
  }
  for (const child of node.children) walk(child, [...stack, frame]);
};
walk(head, []);
const jobs = jobsArg === undefined ? undefined : Number(jobsArg);
const print = (title, map) => {
  console.log(`\n${title}`);
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const per = jobs === undefined ? "" : `${(bytes / jobs).toFixed(0).padStart(6)} B/job  `;
    console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)}%  ${per}${key}`);
  }
};
console.log(
  `sampled ${(total / 1e6).toFixed(1)} MB${jobs === undefined ? "" : `, ${(total / jobs).toFixed(0)} B/job`}`,
);
print("by allocating function", self);
print("by allocating function and the innermost rowclaim function above it", withCaller);
