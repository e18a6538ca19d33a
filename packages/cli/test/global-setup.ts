// Builds dist/ once before the tests that spawn the bin, when it is missing or older than src/
// (turbo's test task builds first; a direct `vitest run` after an edit may not have).
import { ensureBuilt } from "./build.js";

export default function setup(): void {
  ensureBuilt();
}
