// A user's own program around the README's SQLite quick start (copied beside it as example.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runExample } from "./example.js";

const dir = mkdtempSync(join(tmpdir(), "rowclaim-user-"));
const sent: unknown[] = [];
try {
  const broker = await runExample(join(dir, "queue.db"), async (payload) => {
    sent.push(payload);
  });
  const deadline = Date.now() + 30_000;
  while (sent.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await broker.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (JSON.stringify(sent) !== JSON.stringify([{ to: "a@example.com" }])) {
  throw new Error(`expected one job for a@example.com, handled ${JSON.stringify(sent)}`);
}
console.log("sqlite quick start: handled", sent);
