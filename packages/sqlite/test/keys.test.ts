import { symlinkSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { heldKeys } from "../src/keys.js";
import { tempDatabaseFile } from "./support.js";

const opened: Database.Database[] = [];
const files: { remove(): void }[] = [];

afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  for (const file of files.splice(0)) file.remove();
});

function open(path: string): Database.Database {
  const db = new Database(path);
  opened.push(db);
  return db;
}

describe("advisory keys in work are kept per database file", () => {
  it("two connections to one file, one of them through a symbolic link, share one set of keys", () => {
    const temp = tempDatabaseFile();
    files.push(temp);
    const direct = open(temp.file);
    const link = join(dirname(temp.file), "through-a-link.db");
    symlinkSync(temp.file, link);
    const linked = open(link);
    expect(heldKeys(linked)).toBe(heldKeys(direct));
  });

  it("a connection resolves its file once: its keys stay its file's when the link it was opened through is re-pointed", () => {
    const first = tempDatabaseFile();
    const second = tempDatabaseFile();
    files.push(first, second);
    open(second.file);
    const link = join(dirname(first.file), "through-a-link.db");
    symlinkSync(first.file, link);
    const db = open(link);
    const keys = heldKeys(db);
    expect(keys).toBe(heldKeys(open(first.file)));
    // The link now names the other file; the connection still works on the first one.
    unlinkSync(link);
    symlinkSync(second.file, link);
    expect(heldKeys(db)).toBe(keys);
    expect(heldKeys(db)).not.toBe(heldKeys(open(second.file)));
  });

  it("a database in memory has keys of its own", () => {
    const first = open(":memory:");
    const second = open(":memory:");
    expect(heldKeys(first)).not.toBe(heldKeys(second));
    expect(heldKeys(first)).toBe(heldKeys(first));
  });
});
