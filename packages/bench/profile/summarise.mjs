// Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time,
// and self time by file. Usage: node summarise.mjs <file.cpuprofile> [top=40]
import { readFileSync } from "node:fs";

const [file, topArg = "40"] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, "utf8"));
const top = Number(topArg);
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
const deltas = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i += 1) {
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i] ?? 0));
}
const shortUrl = (url) =>
  url
    .replace(/^file:\/\//, "")
    .replace(/.*\/node_modules\/\.pnpm\/([^/]+)\/node_modules\//, "[$1] ")
    .replace(/.*\/packages\//, "");
const byFunction = new Map();
const byFile = new Map();
let total = 0;
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  const where = shortUrl(callFrame.url) || "(native)";
  const key = `${callFrame.functionName || "(anonymous)"}  ${where}:${callFrame.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  byFile.set(where, (byFile.get(where) ?? 0) + us);
  total += us;
}
const print = (title, map, n) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`,
    );
  }
};
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
print("self time by function", byFunction, top);
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const keyOf = (id) => {
  const { callFrame } = byId.get(id);
  return `${callFrame.functionName || "(anonymous)"}  ${shortUrl(callFrame.url) || "(native)"}:${callFrame.lineNumber + 1}`;
};
const inclusive = new Map();
for (const [id, us] of selfUs) {
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) seen.add(keyOf(at));
  for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + us);
}
const ours = new Map([...inclusive].filter(([key]) => /(core|postgres|mysql|sqlite)\/dist\//.test(key)));
print("inclusive time, rowclaim's functions", ours, top);
print("self time by file", byFile, 25);
