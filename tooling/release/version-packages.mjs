// `pnpm version-packages`: applies the pending changesets (`changeset version`), then raises
// the floor of every workspace `@rowclaim/*` peer range (core for the drivers, the drivers for
// the CLI) to the version core (and so the whole fixed group) was just given.
//
// Why: a driver's peer range on core is written `workspace:>=X <1.0.0` rather than
// `workspace:^`. Changesets gives a package a major bump whenever a peer it depends on takes a
// minor one and leaves the peer's range; in 0.x `^0.1.0` excludes 0.2.0, so every minor release
// of the fixed group would have gone to 1.0.0. With `onlyUpdatePeerDependentsWhenOutOfRange`
// (see .changeset/config.json) and a range that holds every 0.x, a minor stays a minor. Raising
// the floor here afterwards keeps what a published driver asks for honest: at least the core
// it was released with (core only adds to the driver contract before 1.0).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const root = resolve(process.argv[2] ?? process.cwd());
const require = createRequire(join(root, "package.json"));

/** Runs `changeset version` in `root` with the workspace's own @changesets/cli. */
function changesetVersion() {
  let bin;
  try {
    bin = require.resolve("@changesets/cli/bin.js");
  } catch {
    bin = createRequire(import.meta.url).resolve("@changesets/cli/bin.js");
  }
  execFileSync(process.execPath, [bin, "version"], { cwd: root, stdio: "inherit" });
}

/** The package.json files of the workspace's packages. */
function manifests() {
  const dir = join(root, "packages");
  return readdirSync(dir)
    .map((name) => join(dir, name, "package.json"))
    .filter((file) => existsSync(file));
}

/** The peer range a package releasing alongside core `version` asks for. */
export function corePeerRange(version) {
  const major = Number(version.split(".")[0]);
  return `workspace:>=${version} <${major + 1}.0.0`;
}

changesetVersion();
const files = manifests();
const core = files
  .map((file) => JSON.parse(readFileSync(file, "utf8")))
  .find((manifest) => manifest.name === "@rowclaim/core");
if (!core) throw new Error("version-packages: no @rowclaim/core in packages/");
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const manifest = JSON.parse(text);
  const peers = manifest.peerDependencies ?? {};
  // Every workspace peer of the fixed group (core for the drivers, the drivers for the CLI's
  // optional peers): they share core's version.
  const grouped = Object.keys(peers).filter(
    (name) => name.startsWith("@rowclaim/") && peers[name].startsWith("workspace:"),
  );
  if (grouped.length === 0) continue;
  for (const name of grouped) peers[name] = corePeerRange(core.version);
  const next = `${JSON.stringify(manifest, null, 2)}\n`;
  if (next !== text) writeFileSync(file, next);
}
