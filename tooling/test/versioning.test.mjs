// Release versioning, tried the way a maintainer runs it: `pnpm version-packages` (changeset
// version, then the core peer floors) in a throwaway copy of the workspace's manifests, then
// `pnpm pack` there, reading the versions and ranges a user would install.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const group = [
  "@rowclaim/core",
  "@rowclaim/conformance",
  "@rowclaim/postgres",
  "@rowclaim/mysql",
  "@rowclaim/sqlite",
];
const copies = [];

afterEach(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Copies the manifests, the changesets config and the version script; only workspace dependencies are kept, so that an offline install links them in a moment. */
function workspaceCopy({ keepPendingChangesets = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "rowclaim-versioning-"));
  copies.push(dir);
  const strip = (manifest) => {
    for (const kind of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      for (const name of Object.keys(manifest[kind] ?? {})) {
        if (!name.startsWith("@rowclaim/")) delete manifest[kind][name];
      }
    }
    delete manifest.scripts;
    return manifest;
  };
  const write = (file, manifest) => {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), `${JSON.stringify(manifest, null, 2)}\n`);
  };
  // Without `packageManager`: pnpm would resolve its own version as a dependency, which an
  // offline install cannot do on a machine whose cache never held pnpm's metadata.
  const { packageManager: _pinned, ...rootManifest } = JSON.parse(
    readFileSync(join(root, "package.json"), "utf8"),
  );
  write("package.json", strip(rootManifest));
  write("tooling/package.json", strip(JSON.parse(readFileSync(join(root, "tooling/package.json"), "utf8"))));
  for (const name of readdirSync(join(root, "packages"))) {
    const file = `packages/${name}/package.json`;
    write(file, strip(JSON.parse(readFileSync(join(root, file), "utf8"))));
  }
  cpSync(join(root, "pnpm-workspace.yaml"), join(dir, "pnpm-workspace.yaml"));
  cpSync(join(root, "tooling/release"), join(dir, "tooling/release"), { recursive: true });
  cpSync(join(root, ".changeset"), join(dir, ".changeset"), {
    recursive: true,
    filter: (source) => keepPendingChangesets || !source.endsWith(".md"),
  });
  return dir;
}

function addChangeset(dir, name, bumps) {
  const front = Object.entries(bumps).map(([pkg, bump]) => `"${pkg}": ${bump}`);
  writeFileSync(join(dir, ".changeset", `${name}.md`), `---\n${front.join("\n")}\n---\n\nA change.\n`);
}

function versionPackages(dir) {
  execFileSync(process.execPath, [join(dir, "tooling/release/version-packages.mjs"), dir], {
    cwd: dir,
    env: { ...process.env, NODE_PATH: join(root, "node_modules") },
    stdio: "pipe",
  });
}

/** What `pnpm pack` puts in each public package's tarball manifest, by package name. */
function packedManifests(dir) {
  execFileSync("pnpm", ["install", "--offline", "--ignore-scripts", "--reporter=silent"], {
    cwd: dir,
    stdio: "pipe",
  });
  const out = join(dir, "packed");
  const manifests = {};
  for (const name of readdirSync(join(dir, "packages"))) {
    const pkgDir = join(dir, "packages", name);
    const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    if (manifest.private) continue;
    execFileSync("pnpm", ["pack", "--pack-destination", out], { cwd: pkgDir, stdio: "pipe" });
    const tarball = readdirSync(out).find(
      (file) =>
        file.startsWith(manifest.name.replace("@", "").replace("/", "-")) &&
        file.endsWith(`${manifest.version}.tgz`),
    );
    const text = execFileSync("tar", ["-xOzf", join(out, tarball), "package/package.json"], {
      encoding: "utf8",
    });
    manifests[manifest.name] = JSON.parse(text);
  }
  return manifests;
}

describe("a minor changeset on the fixed group", () => {
  it("moves core, conformance and the drivers from 0.1.0 to 0.2.0, the CLI follows with a patch, and nothing reaches 1.0.0", () => {
    const dir = workspaceCopy();
    addChangeset(dir, "minor-core", { "@rowclaim/core": "minor" });
    versionPackages(dir);
    const packed = packedManifests(dir);
    for (const name of group) expect(packed[name]?.version, name).toBe("0.2.0");
    expect(packed.rowclaim?.version).toBe("0.1.1");
    for (const name of group.slice(1)) {
      expect(packed[name]?.peerDependencies?.["@rowclaim/core"], name).toBe(">=0.2.0 <1.0.0");
    }
    expect(packed.rowclaim?.dependencies?.["@rowclaim/core"]).toBe("^0.2.0");
    // The drivers are the CLI's optional peers: their floor follows the group too.
    for (const name of ["@rowclaim/postgres", "@rowclaim/mysql", "@rowclaim/sqlite"]) {
      expect(packed.rowclaim?.peerDependencies?.[name], name).toBe(">=0.2.0 <1.0.0");
    }
  });

  it("takes the CLI to 0.2.0 as well when the changeset names it", () => {
    const dir = workspaceCopy();
    addChangeset(dir, "minor-all", { "@rowclaim/postgres": "minor", rowclaim: "minor" });
    versionPackages(dir);
    const packed = packedManifests(dir);
    for (const name of [...group, "rowclaim"]) expect(packed[name]?.version, name).toBe("0.2.0");
  });
});

describe("a patch changeset on the fixed group", () => {
  it("moves the group to 0.1.1 and the CLI follows to 0.1.1, with peer floors at 0.1.1", () => {
    const dir = workspaceCopy();
    addChangeset(dir, "patch-driver", { "@rowclaim/mysql": "patch" });
    versionPackages(dir);
    const packed = packedManifests(dir);
    for (const name of [...group, "rowclaim"]) expect(packed[name]?.version, name).toBe("0.1.1");
    expect(packed["@rowclaim/sqlite"]?.peerDependencies?.["@rowclaim/core"]).toBe(">=0.1.1 <1.0.0");
    expect(packed.rowclaim?.peerDependencies?.["@rowclaim/sqlite"]).toBe(">=0.1.1 <1.0.0");
  });
});

describe("the changesets pending in this repository", () => {
  it("take no package to a new major unless one of them says major", () => {
    const dir = workspaceCopy({ keepPendingChangesets: true });
    const pending = readdirSync(join(dir, ".changeset")).filter((file) => file.endsWith(".md"));
    const saysMajor = pending.some((file) =>
      /:\s*major\s*$/m.test(readFileSync(join(dir, ".changeset", file), "utf8")),
    );
    if (pending.length === 0 || saysMajor) return;
    versionPackages(dir);
    for (const name of readdirSync(join(dir, "packages"))) {
      const manifest = JSON.parse(readFileSync(join(dir, "packages", name, "package.json"), "utf8"));
      expect(manifest.version.startsWith("0."), `${manifest.name} ${manifest.version}`).toBe(true);
    }
  });
});
