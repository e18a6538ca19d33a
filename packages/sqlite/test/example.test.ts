import { readmeShows } from "@rowclaim/tooling/readme-snippet";
import { afterAll, describe, expect, it } from "vitest";
import { runExample } from "./example.js";
import { tempDatabaseFile, waitFor } from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => temp.remove());

describe("the README example", () => {
  it("runs: the published job reaches the handler", async () => {
    const sent: unknown[] = [];
    const broker = await runExample(temp.file, async (payload) => {
      sent.push(payload);
    });
    await waitFor(() => sent.length === 1);
    await broker.close();
    expect(sent).toEqual([{ to: "a@example.com" }]);
  });

  it.each([
    ["this package's README", "../README.md"],
    ["the repository README", "../../../README.md"],
    ["@rowclaim/core's README", "../../core/README.md"],
  ])("is the code %s shows", (_, path) => {
    expect(
      readmeShows(new URL(path, import.meta.url), new URL("./example.ts", import.meta.url), "readme"),
    ).toBe(true);
  });
});
